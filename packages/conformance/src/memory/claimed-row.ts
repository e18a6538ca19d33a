/**
 * Turns a stored row into core's `ClaimedRow`, the way every driver decodes what its claim read.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type ClaimedRow, decodeClaimedRow } from "@rowclaim/core/driver";
import { copyRow, type MemoryRow } from "./store.js";

/**
 * Decodes `stored` as a claim read it, through core's `decodeClaimedRow` (which holds the rules,
 * attempt accounting included): the row is a copy of the stored one, every described column
 * present (`null` where the row has none). `attemptCounted`: the claim wrote `attempt + 1`
 * (lease, advisory).
 */
export function claimedRowOf(table: TableDefinition, stored: MemoryRow, attemptCounted: boolean): ClaimedRow {
  const copied = copyRow(stored);
  const row: Record<string, unknown> = {};
  for (const column of table.allColumns) row[column] = copied[column] ?? null;
  return decodeClaimedRow(table, row, attemptCounted);
}
