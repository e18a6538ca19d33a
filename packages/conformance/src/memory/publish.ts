/**
 * Inserting published rows: every row of one call checked against the table's constraints
 * (and against each other) first, then all of them inserted, or none.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import type { PublishRow } from "@rowclaim/core/driver";
import type { MemoryDatabase, MemoryRow } from "./store.js";
import { rowKey } from "./store.js";

/**
 * Inserts `rows` into `table` and returns their ids, in order; `key`, when given, is written
 * into `keyColumn` of each.
 *
 * @throws {SchemaError} when the table does not exist.
 * @throws {ConstraintError} when a row breaks a constraint; then no row was inserted.
 */
export function insertRows(
  database: MemoryDatabase,
  table: TableDefinition,
  rows: readonly PublishRow[],
  keyColumn?: string,
  key?: string | null,
): readonly RowId[] {
  const data = database.requireTable(table, "publish");
  const { payload, group, runAt, priority, headers, id } = table.columns;
  const made: MemoryRow[] = [];
  for (const row of rows) {
    const values: Record<string, unknown> = {
      [payload]: row.payload instanceof Uint8Array ? new Uint8Array(row.payload) : row.payload,
    };
    if (group !== undefined) values[group] = row.group;
    if (runAt !== undefined) values[runAt] = row.runAt;
    if (priority !== undefined && row.priority !== null) values[priority] = row.priority;
    if (headers !== undefined) values[headers] = row.headers;
    if (keyColumn !== undefined && key !== undefined) values[keyColumn] = key;
    for (const extra of table.extraColumns) {
      if (row.values[extra] !== undefined) values[extra] = row.values[extra];
    }
    const stored = data.newRow(values);
    data.check(stored, undefined, made);
    made.push(stored);
  }
  for (const stored of made) data.rows.set(rowKey(stored[id]), stored);
  return made.map((stored) => stored[id] as RowId);
}
