/**
 * Turns a row read as an array (described columns in `allColumns` order, mysql2's `rowsAsArray`)
 * into core's {@link ClaimedRow}.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type ClaimedRow, decodeClaimedRow } from "@rowclaim/core/driver";

/**
 * Decodes one row read as an array (core's `decodeClaimedRow` holds the rules, attempt accounting
 * included): the values are named by `allColumns`, in order. JSON payloads arrive as text
 * (`jsonStrings: true`), so core parses them once.
 */
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
