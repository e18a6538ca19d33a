/**
 * What an operations driver builds from the rows it read (`operations-driver.ts`), written once:
 * a {@link StoredRow} with what holds it, and the {@link DriverRowActionResult} of the rows an
 * action saw. A driver only says where its client put each value.
 *
 * @module
 */
import type { DriverRowActionResult, StoredRow } from "./operations-driver.js";
import type { ClaimedRow, RowId } from "./rows.js";
import type { TableDefinition } from "./table.js";

/** What a driver read of a row's holder, as its client returned the values. */
export interface HolderValues {
  /** The rendered advisory key (advisory form). */
  readonly key?: unknown;
  /** The session holding the row lock or key, where the database tells; `null` or absent: unknown. */
  readonly session?: unknown;
}

/**
 * A row read for an operation, with whether it is in work and, when it is, what holds it: the
 * lease's expiry (read from the row's `lockedUntil` column: a `Date`, epoch milliseconds or date
 * text), the advisory key and its session from `held`, or a row lock whose session is not known.
 */
export function storedRowOf(
  table: TableDefinition,
  row: ClaimedRow,
  inWork: boolean,
  held: HolderValues = {},
): StoredRow {
  if (!inWork) return { ...row, inWork };
  const until = table.columns.lockedUntil;
  if (table.form === "lease" && until !== undefined)
    return { ...row, inWork, holder: { kind: "lease", until: dateOf(row.row[until]) } };
  if (table.form === "advisory") {
    const session = held.session === null || held.session === undefined ? null : String(held.session);
    return { ...row, inWork, holder: { kind: "advisoryKey", key: String(held.key), session } };
  }
  return { ...row, inWork, holder: { kind: "rowLock", session: null } };
}

/** One row an action saw: its id, whether the action changed it, and its key column's value. */
export interface ActionRow {
  readonly id: RowId;
  readonly changed: boolean;
  readonly key?: unknown;
}

/**
 * The result of a row action from the rows it saw, in their order: the changed ids, the ids left
 * in work, and, for a selection by keys (`byKeys`), the distinct keys that matched a row.
 */
export function rowActionResultOf(rows: Iterable<ActionRow>, byKeys: boolean): DriverRowActionResult {
  const changed: RowId[] = [];
  const inWork: RowId[] = [];
  const keys = new Set<string>();
  for (const row of rows) {
    (row.changed ? changed : inWork).push(row.id);
    if (typeof row.key === "string") keys.add(row.key);
  }
  return byKeys ? { changed, inWork, keys: [...keys] } : { changed, inWork };
}

/** A time as a client returned it (a `Date`, epoch milliseconds as a number or bigint, or date text). */
export function dateOf(value: unknown): Date {
  if (value instanceof Date) return value;
  return typeof value === "number" || typeof value === "bigint"
    ? new Date(Number(value))
    : new Date(String(value));
}
