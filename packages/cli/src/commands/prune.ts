/**
 * `rowclaim prune`: deletes processed rows of a `processedAt` table older than a period, in
 * bounded batches, by one process at a time; progress on long runs.
 *
 * @module
 */
import { prune } from "@rowclaim/core";
import { type Command, EXIT_OK } from "../command.js";
import {
  batchSizeFlag,
  operationFlags,
  operationTarget,
  parseDuration,
  progressReporter,
  requiredString,
} from "../operation-target.js";

/** The `prune` command. */
export const pruneCommand: Command = {
  spec: {
    name: "prune",
    summary: "delete processed rows older than a period, in batches, one process at a time",
    details: [
      "Needs a processedAt column. Deletes the oldest processed rows first, one short statement per",
      "batch (never one long one that locks the table). While another prune of the table runs (in",
      "any process), this one deletes nothing, says so and exits 0: PostgreSQL holds an advisory lock,",
      "MySQL/MariaDB GET_LOCK, SQLite an exclusive lock on a companion file <db>-rowclaim-prune.",
      "Run it from cron. Progress goes to stderr on long runs.",
    ],
    flags: {
      ...operationFlags,
      "older-than": {
        type: "string",
        value: "PERIOD",
        required: true,
        description: "Rows processed longer ago than this: 30s, 15m, 12h, 7d, 2w (or milliseconds).",
      },
      "batch-size": batchSizeFlag,
    },
    examples: [
      "rowclaim prune --config rowclaim.config.mjs --table jobs --older-than 7d",
      "rowclaim prune --url app.db --table tasks --processed-at --older-than 12h --batch-size 1000",
    ],
  },
  async run(flags, io) {
    const olderThan = parseDuration(requiredString(flags, "older-than", "prune"), "older-than", "prune");
    const { table, driver } = await operationTarget(flags, "prune");
    try {
      const batchSize = flags.values["batch-size"];
      const result = await prune(driver, table, {
        olderThan,
        ...(typeof batchSize === "number" ? { batchSize } : {}),
        onProgress: progressReporter(io.stderr, "prune"),
      });
      if (!result.ran) {
        io.stderr.write(
          `rowclaim prune: another prune of ${table.name} is running; this one deleted nothing.\n`,
        );
        return EXIT_OK;
      }
      io.stdout.write(
        `table ${table.name}: pruned ${result.deleted} processed row(s) in ${result.batches} batch(es).\n`,
      );
      return EXIT_OK;
    } finally {
      await driver.close();
    }
  },
};
