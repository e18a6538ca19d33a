/**
 * Unique publishes in the memory database: each row inserted unless a queued row holds its key
 * (the table's unique index on the key column refuses the second), then kept or replaced. The
 * memory database runs one call at a time, so no race needs a retry here.
 *
 * @module
 */
import type { PublishResult, TableDefinition } from "@rowclaim/core";
import type { UniquePublishRow } from "@rowclaim/core/driver";
import { insertRows } from "./publish.js";
import type { MemoryDatabase } from "./store.js";
import { rowKey } from "./store.js";

/**
 * Publishes `rows` of `table` with their keys, in order, and returns what happened to each.
 *
 * @throws {SchemaError} when the table does not exist.
 * @throws {ConstraintError} when a row breaks another constraint; rows before it stay written.
 */
export function publishUniqueRows(
  database: MemoryDatabase,
  table: TableDefinition,
  rows: readonly UniquePublishRow[],
): readonly PublishResult[] {
  const data = database.requireTable(table, "publish");
  const { id, key: keyColumn, payload, runAt, priority, headers } = table.columns;
  return rows.map((row): PublishResult => {
    const holder =
      row.key === null || keyColumn === undefined
        ? undefined
        : [...data.rows.entries()].find(([, stored]) => stored[keyColumn] === row.key);
    if (holder === undefined) {
      const [inserted] = insertRows(database, table, [row], keyColumn, row.key);
      return { id: inserted as PublishResult["id"], outcome: "inserted" };
    }
    const [storedKey, stored] = holder;
    if (row.onConflict === "keep") return { id: stored[id] as PublishResult["id"], outcome: "kept" };
    const replaced: Record<string, unknown> = {
      ...stored,
      [payload]: row.payload instanceof Uint8Array ? new Uint8Array(row.payload) : row.payload,
    };
    if (runAt !== undefined) replaced[runAt] = row.runAt;
    if (priority !== undefined && row.priority !== null) replaced[priority] = row.priority;
    if (headers !== undefined) replaced[headers] = row.headers;
    data.check(replaced, storedKey);
    data.rows.set(rowKey(stored[id]), replaced);
    return { id: stored[id] as PublishResult["id"], outcome: "replaced" };
  });
}
