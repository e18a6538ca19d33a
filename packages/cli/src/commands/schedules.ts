/**
 * `rowclaim schedules`: the schedules the ledger (`rowclaim_schedule_ticks`) knows for each
 * table: the last tick published and how many ticks it keeps; with a config module that
 * declares `schedules`, also the next ticks of each, and the declared ones never published yet.
 * Read-only.
 *
 * @module
 */
import { BrokerError, defineTable, type TableDefinition } from "@rowclaim/core";
import type { LedgerSchedule } from "@rowclaim/core/driver";
import { listFlag, type ParsedFlags, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import { findConfig, loadConfig, pickTables } from "../config.js";
import { createDriver } from "../connect.js";
import { type DeclaredSchedule, loadScheduleDeclarations } from "../schedule-config.js";
import { configFlag, urlFlag } from "../table-source.js";
import { parseTarget } from "../target.js";
import { formatTextTable } from "../text-table.js";

/** The `schedules` command. */
export const schedulesCommand: Command = {
  spec: {
    name: "schedules",
    summary: "list the schedules the ledger knows per table: last tick, next ticks",
    details: [
      "Read-only. For each table: every schedule its ledger (rowclaim_schedule_ticks, in the table's",
      "schema or database) holds, with the last tick published and how many ticks the ledger keeps.",
      "With a config module (--config, or rowclaim.config.mjs here) whose `schedules` export lists",
      "{ table, name, cron, timezone }, also the next ticks of each declared schedule, and the",
      "declared ones never published yet; a schedule in the ledger but not declared was removed",
      "(or renamed) in code.",
    ],
    flags: {
      url: urlFlag,
      config: configFlag,
      table: {
        type: "string",
        value: "NAME",
        multiple: true,
        description: "The table(s) to list (required without a config module).",
      },
      schema: {
        type: "string",
        value: "SCHEMA",
        description: "Without a config module: the schema (PostgreSQL) or database (MySQL) of the tables.",
      },
      next: {
        type: "string",
        value: "N",
        defaultText: "3",
        description: "How many next ticks to print for each declared schedule.",
      },
    },
    examples: [
      "rowclaim schedules --url postgres://localhost/app --table jobs",
      "rowclaim schedules --config rowclaim.config.mjs",
    ],
  },
  async run(flags, io) {
    const next = nextCount(flags);
    const file = findConfig(stringFlag(flags, "config"));
    const named = listFlag(flags, "table");
    let tables: readonly TableDefinition[];
    let declared: readonly DeclaredSchedule[] = [];
    let url = stringFlag(flags, "url");
    if (file === undefined) {
      if (named.length === 0)
        throw new UsageError(
          "schedules needs --table NAME, or a config module (--config FILE, or rowclaim.config.mjs here).",
          "schedules",
        );
      const schema = stringFlag(flags, "schema");
      tables = named.map((name) =>
        defineTable({
          name,
          ...(schema === undefined ? {} : { schema }),
          columns: { id: "id", payload: "payload" },
        }),
      );
    } else {
      const config = await loadConfig(file);
      tables = pickTables(config, named, "schedules");
      declared = await loadScheduleDeclarations(file);
      url ??= config.url;
    }
    if (url === undefined)
      throw new UsageError("schedules needs --url URL (or a url in the config).", "schedules");
    const driver = await createDriver(parseTarget(url, "schedules"), { poolSize: 1 });
    try {
      const ledger = driver.scheduleLedger;
      if (ledger === undefined) {
        io.stderr.write(`rowclaim schedules: the ${driver.name} driver keeps no schedule ledger.\n`);
        return EXIT_FAILED;
      }
      const now = new Date();
      const rows: string[][] = [];
      for (const table of tables) {
        let known: readonly LedgerSchedule[];
        try {
          await ledger.check(table);
          known = await ledger.list(table);
        } catch (error) {
          if (!BrokerError.is(error, "SCHEMA")) throw error;
          io.stderr.write(
            `rowclaim schedules: ${error.message}\nCreate it with: rowclaim schema --schedules --apply --url URL\n`,
          );
          return EXIT_FAILED;
        }
        const ofTable = declared.filter((schedule) => schedule.table === table.name);
        const names = [
          ...new Set([...known.map((entry) => entry.name), ...ofTable.map((entry) => entry.name)]),
        ].sort();
        for (const name of names) {
          const entry = known.find((candidate) => candidate.name === name);
          const schedule = ofTable.find((candidate) => candidate.name === name);
          const upcoming =
            schedule === undefined
              ? declared.length === 0
                ? ""
                : "(not declared in the config)"
              : schedule.ticks
                  .between(now, new Date(8.64e15), next)
                  .map((tick) => tick.toISOString())
                  .join(", ");
          rows.push([
            table.name,
            name,
            entry === undefined ? "never" : entry.lastTick.toISOString(),
            entry === undefined ? "0" : String(entry.ticks),
            schedule === undefined ? "" : `${schedule.ticks.cron} (${schedule.ticks.timezone})`,
            upcoming,
          ]);
        }
      }
      if (rows.length === 0) {
        io.stdout.write("No schedule has published to these tables yet.\n");
        return EXIT_OK;
      }
      io.stdout.write(
        formatTextTable(["table", "schedule", "last tick", "kept", "cron", "next ticks"], rows),
      );
      return EXIT_OK;
    } finally {
      await driver.close();
    }
  },
};

function nextCount(flags: ParsedFlags): number {
  const text = stringFlag(flags, "next") ?? "3";
  const count = Number(text);
  if (!Number.isInteger(count) || count < 0 || count > 100)
    throw new UsageError(`--next ${text}: give a whole number from 0 to 100.`, "schedules");
  return count;
}
