/**
 * Claim order in JavaScript, for the rows SQLite's `UPDATE … RETURNING` returns in no order.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";

/** SQLite's order between storage classes: NULL, then numbers, then text, then blobs. */
function storageRank(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === "number" || typeof value === "bigint") return 1;
  if (typeof value === "string") return 2;
  return 3;
}

/** Compares two column values the way SQLite's ascending `ORDER BY` does (NULLs first). */
function compareSqliteValues(a: unknown, b: unknown): number {
  const rank = storageRank(a) - storageRank(b);
  if (rank !== 0) return rank;
  if (typeof a === "number" || typeof a === "bigint") {
    const x = a as number | bigint;
    const y = b as number | bigint;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  return 0;
}

/** Sorts rows (as read, by column name) into claim order: priority, runAt (NULLs first), id. */
export function sortClaimOrder<R extends Record<string, unknown>>(table: TableDefinition, rows: R[]): R[] {
  const keys = [table.columns.priority, table.columns.runAt, table.columns.id].filter(
    (column): column is string => column !== undefined,
  );
  return rows.sort((a, b) => {
    for (const key of keys) {
      const order = compareSqliteValues(a[key], b[key]);
      if (order !== 0) return order;
    }
    return 0;
  });
}
