/**
 * `rowclaim pause` and `rowclaim resume`: pause (or resume) claiming from a table, or from one
 * group of it, in every process, through the broker's own `pause`/`resume` (stored in the
 * database's `rowclaim_controls` table, which the first pause creates). Subscriptions stop
 * claiming within one poll interval; rows in work finish.
 *
 * @module
 */
import { createBroker, type PauseOptions, silentLogger, type TableDefinition } from "@rowclaim/core";
import { stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_OK } from "../command.js";
import { createDriver } from "../connect.js";
import { configFlag, tablesFor, urlFlag, urlFor } from "../table-source.js";
import { describeTarget, parseTarget } from "../target.js";
import { tableFromFlags } from "./schema.js";

/** The `pause` or `resume` command. */
function controlCommand(verb: "pause" | "resume"): Command {
  const doing = verb === "pause" ? "stop claiming from" : "claim again from";
  return {
    spec: {
      name: verb,
      summary:
        verb === "pause"
          ? "pause claiming from a table (or one group) in every process, until resumed"
          : "resume claiming from a table (or one group) paused with `rowclaim pause`",
      details: [
        `Every subscription of the table (or of the --group) ${doing} it within one poll interval`,
        "(at once on PostgreSQL drivers with notify and watchControls). Rows in work finish. The state lives",
        "in the database's rowclaim_controls table (created by the first pause) and outlives restarts.",
        "With a config module (--config, or rowclaim.config.mjs here) --table names one of its tables.",
      ],
      flags: {
        url: urlFlag,
        config: configFlag,
        table: { type: "string", value: "NAME", description: "The table (required)." },
        group: {
          type: "string",
          value: "NAME",
          defaultText: "the whole table",
          description: `Only this group (the table needs a group column).`,
        },
      },
      examples: [
        `rowclaim ${verb} --url postgres://localhost/app --table jobs`,
        `rowclaim ${verb} --config rowclaim.config.mjs --table emails --group bulk`,
      ],
    },
    async run(flags, io) {
      if (stringFlag(flags, "table") === undefined) throw new UsageError(`${verb} needs --table NAME.`, verb);
      const source = await tablesFor(flags, verb, tableFromFlags);
      const target = parseTarget(urlFor(flags, source, verb), verb);
      const table = source.tables[0] as TableDefinition;
      const group = stringFlag(flags, "group");
      const options: PauseOptions = group === undefined ? {} : { group };
      const broker = createBroker({
        driver: await createDriver(target, { poolSize: 1 }),
        logger: silentLogger,
      });
      try {
        await (verb === "pause" ? broker.pause(table, options) : broker.resume(table, options));
        const state = await broker.controlState(table);
        const what = group === undefined ? `table ${table.name}` : `group ${group} of table ${table.name}`;
        io.stdout.write(`${verb === "pause" ? "paused" : "resumed"} ${what} in ${describeTarget(target)}.\n`);
        const groups = state.pausedGroups.length === 0 ? "none" : state.pausedGroups.join(", ");
        io.stdout.write(
          `table ${table.name}: ${state.paused ? "paused" : "not paused"}; groups paused on their own: ${groups}.\n`,
        );
        return EXIT_OK;
      } finally {
        await broker.close();
      }
    },
  };
}

/** The `pause` command. */
export const pauseCommand: Command = controlCommand("pause");

/** The `resume` command. */
export const resumeCommand: Command = controlCommand("resume");
