/**
 * Turns a row as `pg` read it into core's `ClaimedRow`, and puts rows back into claim order
 * (an `UPDATE … RETURNING` returns them in no particular order).
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type ClaimedRow, decodeClaimedRow } from "@rowclaim/core/driver";
import { PAYLOAD_TEXT_ALIAS } from "./sql.js";

/**
 * Decodes one row as `pg` read it (core's `decodeClaimedRow` holds the rules, attempt accounting
 * included). `pg`'s quirks: a json payload read as text under `PAYLOAD_TEXT_ALIAS` is what is
 * decoded (parsed once; the row's payload column then holds the parsed value, as `pg` would have
 * given it), and the row holds only the described columns. `known`: values of columns the
 * statement did not return because the claim wrote them (a lease's expiry).
 */
export function claimedRowOf(
  table: TableDefinition,
  raw: Record<string, unknown>,
  attemptCounted: boolean,
  known?: Readonly<Record<string, unknown>>,
): ClaimedRow {
  const row: Record<string, unknown> = {};
  for (const column of table.allColumns) {
    row[column] = known !== undefined && column in known ? known[column] : raw[column];
  }
  return decodeClaimedRow(
    table,
    row,
    attemptCounted,
    PAYLOAD_TEXT_ALIAS in raw ? raw[PAYLOAD_TEXT_ALIAS] : undefined,
  );
}

function compareIds(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const left = String(a);
  const right = String(b);
  if (/^-?\d+$/.test(left) && /^-?\d+$/.test(right)) {
    const x = BigInt(left);
    const y = BigInt(right);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return left < right ? -1 : left > right ? 1 : 0;
}

function timeOf(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.getTime();
  const parsed = new Date(String(value)).getTime();
  return Number.isNaN(parsed) ? null : parsed;
}

/** Sorts claimed rows into claim order: priority, then runAt with NULLs first, then id. */
export function sortIntoClaimOrder<T extends { readonly row: ClaimedRow }>(
  table: TableDefinition,
  items: T[],
): T[] {
  const { priority, runAt } = table.columns;
  return items.sort((a, b) => {
    if (priority !== undefined) {
      const diff = Number(a.row.row[priority]) - Number(b.row.row[priority]);
      if (diff !== 0 && Number.isFinite(diff)) return diff;
    }
    if (runAt !== undefined) {
      const x = timeOf(a.row.row[runAt]);
      const y = timeOf(b.row.row[runAt]);
      if (x !== y) {
        if (x === null) return -1;
        if (y === null) return 1;
        return x - y;
      }
    }
    return compareIds(a.row.id, b.row.id);
  });
}
