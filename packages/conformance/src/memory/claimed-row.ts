/**
 * Turns a stored row into core's `ClaimedRow`, the way every driver decodes what its claim read.
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
import { copyRow, type MemoryRow } from "./store.js";

/**
 * Decodes `stored` as a claim read it. `attemptCounted`: the claim wrote `attempt + 1` (lease,
 * advisory), so the attempt the delivery reports (as it stood before the claim) is one less.
 */
export function claimedRow(table: TableDefinition, stored: MemoryRow, attemptCounted: boolean): ClaimedRow {
  const { columns } = table;
  const copied = copyRow(stored);
  const row: Record<string, unknown> = {};
  for (const column of table.allColumns) row[column] = copied[column] ?? null;
  const group = columns.group === undefined ? null : stored[columns.group];
  return {
    id: stored[columns.id] as RowId,
    payload: decodePayload(table, copied[columns.payload]),
    attempt: columns.attempt === undefined ? 1 : Number(stored[columns.attempt]) - (attemptCounted ? 1 : 0),
    group: typeof group === "string" ? group : null,
    headers: columns.headers === undefined ? {} : decodeHeaders(stored[columns.headers]),
    row: Object.freeze(row),
  };
}
