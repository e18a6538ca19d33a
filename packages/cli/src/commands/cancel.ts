/**
 * `rowclaim cancel`: cancels queued rows (due or delayed) by id or by key: deletes them. A row
 * in work is reported and left alone. Exits 1 when a row was in work or not found.
 *
 * @module
 */
import { cancel, keyColumnOf, type RowActionResult } from "@rowclaim/core";
import { listFlag, UsageError } from "../args.js";
import { type Command, EXIT_FAILED, EXIT_OK } from "../command.js";
import {
  batchSizeFlag,
  idFlag,
  operationFlags,
  operationTarget,
  parseIds,
  progressReporter,
} from "../operation-target.js";

/** The `cancel` command. */
export const cancelCommand: Command = {
  spec: {
    name: "cancel",
    summary: "cancel queued rows by id or key; rows in work are reported and left alone",
    details: [
      "Deletes each named row that is queued (due or delayed; not processed, not dead). A row in work",
      "is never waited on or touched: row lock rows are seen with SKIP LOCKED, leases by their expiry,",
      "advisory rows by a try-lock of their key. Prints what was cancelled, what is in work and what",
      "matched nothing; exits 1 unless every row was cancelled.",
    ],
    flags: {
      ...operationFlags,
      id: idFlag,
      "row-key": {
        type: "string",
        value: "KEY",
        multiple: true,
        description: "A row's key (the table's key column; repeatable).",
      },
      "batch-size": batchSizeFlag,
      json: { type: "boolean", description: "Print JSON instead of lines." },
    },
    examples: [
      "rowclaim cancel --config rowclaim.config.mjs --table jobs --id 42 --id 43",
      "rowclaim cancel --url postgres://localhost/app --table jobs --row-key order-7",
    ],
  },
  async run(flags, io) {
    const ids = listFlag(flags, "id");
    const keys = listFlag(flags, "row-key");
    if ((ids.length === 0) === (keys.length === 0))
      throw new UsageError("cancel needs --id ID… or --row-key KEY… (one of them).", "cancel");
    const { table, driver } = await operationTarget(flags, "cancel");
    try {
      if (keys.length > 0 && keyColumnOf(table) === undefined)
        throw new UsageError(`table ${table.name} has no key column: cancel it by --id.`, "cancel");
      const batchSize = flags.values["batch-size"];
      const result = await cancel(driver, table, ids.length > 0 ? { ids: parseIds(ids) } : { keys }, {
        ...(typeof batchSize === "number" ? { batchSize } : {}),
        onProgress: progressReporter(io.stderr, "cancel"),
      });
      writeResult(io.stdout, table.name, "cancelled", result, flags.values.json === true);
      return result.inWork.length === 0 && result.missing.length === 0 ? EXIT_OK : EXIT_FAILED;
    } finally {
      await driver.close();
    }
  },
};

/** Prints what a row action did: as lines, or as JSON. */
export function writeResult(
  out: { write(text: string): unknown },
  table: string,
  verb: string,
  result: RowActionResult,
  json: boolean,
): void {
  if (json) {
    out.write(
      `${JSON.stringify({ table, [verb]: result.changed.map(String), inWork: result.inWork.map(String), missing: result.missing.map(String) })}\n`,
    );
    return;
  }
  out.write(`table ${table}: ${verb} ${result.changed.length} row(s)${list(result.changed)}\n`);
  if (result.inWork.length > 0)
    out.write(`in work, left alone: ${result.inWork.length} row(s)${list(result.inWork)}\n`);
  if (result.missing.length > 0)
    out.write(`matched no queued row: ${result.missing.map(String).join(", ")}\n`);
}

function list(ids: readonly unknown[]): string {
  if (ids.length === 0) return "";
  const shown = ids.slice(0, 20).map(String).join(", ");
  return `: ${shown}${ids.length > 20 ? ", …" : ""}`;
}
