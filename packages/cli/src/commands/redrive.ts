/**
 * `rowclaim redrive`: sends dead-lettered rows back to the queue (by id, by payload text, or
 * all), in bounded batches, attempts reset, in the order they died; progress on long runs.
 *
 * @module
 */
import { type RedriveSelection, redrive } from "@rowclaim/core";
import { booleanFlag, listFlag, stringFlag, UsageError } from "../args.js";
import { type Command, EXIT_OK } from "../command.js";
import {
  batchSizeFlag,
  idFlag,
  operationFlags,
  operationTarget,
  parseIds,
  progressReporter,
} from "../operation-target.js";

/** The `redrive` command. */
export const redriveCommand: Command = {
  spec: {
    name: "redrive",
    summary: "send dead-lettered rows back to the queue: by id, by payload text, or all",
    details: [
      "The table's dead letter (deadLetter in the description: a group, or a table) holds the rows.",
      "Each batch is one transaction: the rows go back with attempt 1, due at once, in id order (the",
      "order they died in). A group dead letter does not keep a row's own group: --group names the",
      "group they go back to (default none, the NULL group). Progress goes to stderr on long runs.",
    ],
    flags: {
      ...operationFlags,
      id: idFlag,
      text: {
        type: "string",
        value: "TEXT",
        description: "Only dead rows whose payload text contains TEXT.",
      },
      all: { type: "boolean", description: "Every dead row." },
      group: { type: "string", value: "GROUP", description: "The group the rows go back to." },
      "dead-letter-group": {
        type: "string",
        value: "GROUP",
        description: "Without a config module: the standard layout's dead-letter group.",
      },
      "batch-size": batchSizeFlag,
    },
    examples: [
      "rowclaim redrive --config rowclaim.config.mjs --table jobs --all",
      "rowclaim redrive --url app.db --table jobs --dead-letter-group dead --id 7 --id 9",
      "rowclaim redrive --config rowclaim.config.mjs --table jobs --text order-7 --group work",
    ],
  },
  async run(flags, io) {
    const ids = listFlag(flags, "id");
    const text = stringFlag(flags, "text");
    const all = booleanFlag(flags, "all");
    const chosen = [ids.length > 0, text !== undefined, all].filter(Boolean).length;
    if (chosen !== 1) throw new UsageError("redrive needs one of --id ID…, --text TEXT or --all.", "redrive");
    const selection: RedriveSelection =
      ids.length > 0 ? { ids: parseIds(ids) } : text !== undefined ? { filter: { text } } : { all: true };
    const { table, driver } = await operationTarget(flags, "redrive", stringFlag(flags, "dead-letter-group"));
    try {
      const batchSize = flags.values["batch-size"];
      const group = stringFlag(flags, "group");
      const result = await redrive(driver, table, selection, {
        ...(typeof batchSize === "number" ? { batchSize } : {}),
        ...(group === undefined ? {} : { group }),
        onProgress: progressReporter(io.stderr, "redrive"),
      });
      io.stdout.write(
        `table ${table.name}: redrove ${result.redriven} dead row(s) in ${result.batches} batch(es).\n`,
      );
      return EXIT_OK;
    } finally {
      await driver.close();
    }
  },
};
