/**
 * Which rows a claim may take and in which order: the conditions and the `ORDER BY` every
 * built-in driver's claim statement writes, as functions over stored rows.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type MemoryRow, type MemoryTable, timeOf } from "./store.js";

/** A stored row with the key the store keeps it under. */
export interface KeyedRow {
  readonly key: string;
  readonly row: MemoryRow;
}

/** Whether `row` belongs to the subscription's group (`null`: rows whose group is NULL). */
export function inGroup(table: TableDefinition, row: MemoryRow, group: string | null): boolean {
  const column = table.columns.group;
  if (column === undefined) return true;
  const value = row[column];
  return group === null ? value === null || value === undefined : value === group;
}

/** Whether `row` is not finished (`processedAt` NULL, or no such column). */
export function unfinished(table: TableDefinition, row: MemoryRow): boolean {
  const column = table.columns.processedAt;
  return column === undefined || row[column] === null || row[column] === undefined;
}

/** Whether a time column is NULL or at or before `now`. */
function atOrBefore(value: unknown, now: number): boolean {
  const time = timeOf(value);
  return time === null || time <= now;
}

/**
 * Whether a claim at `now` may take `row`: unfinished, in the group, due (`runAt` NULL or past)
 * and, in the lease form, not leased (`lockedUntil` NULL or past).
 */
export function claimable(table: TableDefinition, row: MemoryRow, group: string | null, now: Date): boolean {
  const { runAt, lockedUntil } = table.columns;
  const at = now.getTime();
  return (
    unfinished(table, row) &&
    inGroup(table, row, group) &&
    (runAt === undefined || atOrBefore(row[runAt], at)) &&
    (lockedUntil === undefined || atOrBefore(row[lockedUntil], at))
  );
}

function compareIds(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Claim order: priority, then `runAt` with NULL first, then id. */
export function claimOrder(table: TableDefinition): (a: MemoryRow, b: MemoryRow) => number {
  const { priority, runAt, id } = table.columns;
  return (a, b) => {
    if (priority !== undefined) {
      const diff = Number(a[priority] ?? 0) - Number(b[priority] ?? 0);
      if (diff !== 0) return diff;
    }
    if (runAt !== undefined) {
      const x = timeOf(a[runAt]);
      const y = timeOf(b[runAt]);
      if (x !== y) {
        if (x === null) return -1;
        if (y === null) return 1;
        return x - y;
      }
    }
    return compareIds(a[id], b[id]);
  };
}

/**
 * The first `limit` rows of `data`, in claim order, that `accept` takes: one pass over the
 * table, keeping a sorted window of at most `limit` rows.
 */
export function firstInClaimOrder(
  table: TableDefinition,
  data: MemoryTable,
  accept: (row: MemoryRow, key: string) => boolean,
  limit: number,
): KeyedRow[] {
  const compare = claimOrder(table);
  const picked: KeyedRow[] = [];
  if (limit < 1) return picked;
  for (const [key, row] of data.rows) {
    const last = picked[picked.length - 1];
    if (picked.length >= limit && last !== undefined && compare(row, last.row) >= 0) continue;
    if (!accept(row, key)) continue;
    let at = picked.length;
    while (at > 0 && compare(row, (picked[at - 1] as KeyedRow).row) < 0) at -= 1;
    picked.splice(at, 0, { key, row });
    if (picked.length > limit) picked.pop();
  }
  return picked;
}

/**
 * The head of a FIFO group: its first unfinished row in claim order, due or not, locked or
 * not. A FIFO claim takes this row or nothing.
 */
export function fifoHead(
  table: TableDefinition,
  data: MemoryTable,
  group: string | null,
): KeyedRow | undefined {
  return firstInClaimOrder(table, data, (row) => unfinished(table, row) && inGroup(table, row, group), 1)[0];
}

/** The advisory key of `row`, rendered from the table's template (a NULL column renders as ""). */
export function renderKey(table: TableDefinition, row: MemoryRow): string {
  let key = "";
  for (const part of table.advisoryKey?.parts ?? []) {
    if ("literal" in part) key += part.literal;
    else {
      const value = row[part.column];
      key += value === null || value === undefined ? "" : String(value);
    }
  }
  return key;
}
