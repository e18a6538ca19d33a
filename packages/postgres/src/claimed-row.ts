/**
 * Turns a row as `pg` read it into core's `ClaimedRow`, and puts rows back into claim order.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type ClaimedRow, decodeClaimedRow } from "@rowclaim/core/driver";
import { PAYLOAD_TEXT_ALIAS } from "./sql.js";

/**
 * Decodes one row as `pg` read it with core's `decodeClaimedRow` (a json payload from its text
 * under `PAYLOAD_TEXT_ALIAS`); `knownColumn`, `knownValue`: a value the claim wrote and did not
 * read back (a lease's expiry).
 */
export function claimedRowOf(
  table: TableDefinition,
  raw: Record<string, unknown>,
  attemptCounted: boolean,
  knownColumn?: string,
  knownValue?: unknown,
): ClaimedRow {
  const row: Record<string, unknown> = {};
  const columns = table.allColumns;
  for (let index = 0; index < columns.length; index += 1) {
    const column = columns[index] as string;
    row[column] = column === knownColumn ? knownValue : raw[column];
  }
  return decodeClaimedRow(table, row, attemptCounted, raw[PAYLOAD_TEXT_ALIAS]);
}

/** Where the significant digits of `text` start (1-based, negative when negative), or 0 if not a whole number. */
function wholeAt(text: string): number {
  const negative = text.charCodeAt(0) === 45;
  let start = negative ? 1 : 0;
  if (start === text.length) return 0;
  for (let index = start; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 48 || code > 57) return 0;
  }
  while (start < text.length - 1 && text.charCodeAt(start) === 48) start += 1;
  // Minus zero is zero.
  const zero = start === text.length - 1 && text.charCodeAt(start) === 48;
  return negative && !zero ? -(start + 1) : start + 1;
}

/** Two whole numbers written in digits (`wholeAt` of each given), by value, without making a `BigInt`. */
function compareWhole(a: string, aAt: number, b: string, bAt: number): number {
  const aNegative = aAt < 0;
  if (aNegative !== bAt < 0) return aNegative ? -1 : 1;
  const aStart = Math.abs(aAt) - 1;
  const bStart = Math.abs(bAt) - 1;
  let magnitude = a.length - aStart - (b.length - bStart);
  for (let index = 0; magnitude === 0 && aStart + index < a.length; index += 1) {
    magnitude = a.charCodeAt(aStart + index) - b.charCodeAt(bStart + index);
  }
  return aNegative ? -magnitude : magnitude;
}

/** Numbers by value; whole numbers in digits by value; anything else as text. Makes no object. */
function compareIds(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const left = typeof a === "string" ? a : String(a);
  const right = typeof b === "string" ? b : String(b);
  const leftAt = wholeAt(left);
  const rightAt = leftAt === 0 ? 0 : wholeAt(right);
  if (leftAt !== 0 && rightAt !== 0) return compareWhole(left, leftAt, right, rightAt);
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
  const order = (a: T, b: T): number => {
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
  };
  // Mostly in claim order already: one pass tells, and only rows that are not get sorted.
  for (let index = 1; index < items.length; index += 1) {
    if (order(items[index - 1] as T, items[index] as T) > 0) return items.sort(order);
  }
  return items;
}
