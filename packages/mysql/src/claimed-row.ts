/**
 * Turns a row read as an array (described columns in `allColumns` order) into core's
 * {@link ClaimedRow}.
 *
 * @module
 */
import {
  type ClaimedRow,
  decodeHeaders,
  decodePayload,
  type RowId,
  type TableDefinition,
} from "@rowclaim/core";

/**
 * Decodes one row. `attemptOffset` is what the claim already added to the attempt column before
 * reading it back (1 in the lease and advisory forms, 0 in the row lock form), so that
 * `attempt` reports the attempt as it stood before the claim.
 */
export function toClaimedRow(
  table: TableDefinition,
  values: readonly unknown[],
  attemptOffset: number,
): ClaimedRow {
  const row: Record<string, unknown> = {};
  table.allColumns.forEach((column, index) => {
    row[column] = values[index];
  });
  const c = table.columns;
  const attempt = c.attempt === undefined ? 1 : Number(row[c.attempt]) - attemptOffset;
  const group = c.group === undefined ? null : row[c.group];
  return Object.freeze({
    id: row[c.id] as RowId,
    payload: decodePayload(table, row[c.payload]),
    attempt,
    group: group === null || group === undefined ? null : String(group),
    headers: c.headers === undefined ? {} : decodeHeaders(row[c.headers]),
    row: Object.freeze(row),
  });
}
