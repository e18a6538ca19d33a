/**
 * Turns a row read as an array (mysql2's `rowsAsArray`) into core's {@link ClaimedRow}.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type ClaimedRow, decodeClaimedRow } from "@rowclaim/core/driver";

/** Decodes one row read as an array, its values named by `allColumns` in order, with core's `decodeClaimedRow`. */
export function claimedRowOf(
  table: TableDefinition,
  values: readonly unknown[],
  attemptCounted: boolean,
): ClaimedRow {
  const row: Record<string, unknown> = {};
  const columns = table.allColumns;
  for (let index = 0; index < columns.length; index += 1) row[columns[index] as string] = values[index];
  return decodeClaimedRow(table, row, attemptCounted);
}
