/**
 * The driver's side of queue status (`Driver.queueStatus`): the reader and what it reports.
 * Apart from `queue-status.ts` (core's functions over it) so that the driver contract imports
 * types only.
 *
 * @module
 */
import type { RowId } from "./rows.js";
import type { ClaimFormName, TableDefinition } from "./table.js";

/** A count that stops at a cap: `count` is exact when `capped` is false, a lower bound when true. */
export interface CappedCount {
  /** The rows counted (at most the cap). */
  readonly count: number;
  /** Whether counting stopped at the cap (or saw only part of the rows): there are at least `count`. */
  readonly capped: boolean;
}

/**
 * Who a reader's in-work figures cover: `"database"` (every session of the database server) or
 * `"process"` (only what this process holds, as SQLite's advisory keys, which live in the
 * process that took them).
 */
export type InWorkScope = "database" | "process";

/** What {@link QueueStatusReader.countGroups} is asked. */
export interface StatusQuery {
  /** The host's clock, as the drivers compare times (leases, `runAt`). */
  readonly now: Date;
  /** Count each figure up to this many rows (a whole number, at least 1). */
  readonly cap: number;
  /**
   * The dead-letter group of the table (its `deadLetter: { group }`): its unprocessed rows count
   * as dead, not due, delayed or in work. Absent when the table has none.
   */
  readonly deadGroup?: string;
}

/** One group's counts, as a driver reads them. */
export interface GroupCounts {
  /** The group, or `null` (rows without a group, or a table without a group column). */
  readonly group: string | null;
  /** Unprocessed, not dead, not in work, `runAt` empty or past. */
  readonly due: CappedCount;
  /** Unprocessed, not dead, not in work, `runAt` in the future (scheduled, or waiting to retry). */
  readonly delayed: CappedCount;
  /** Held now by a worker, by the form's own means (see the module's notes). */
  readonly inWork: CappedCount;
  /** Unprocessed rows of the dead-letter group (a dead-letter table's rows are added by core). */
  readonly dead: CappedCount;
  /** Rows marked in `processedAt` (a table without the column keeps none: always 0). */
  readonly processed: CappedCount;
  /** When the oldest due row became due (`runAt`, or `null` where the table has no `runAt`), if any row is due. */
  readonly oldestDueAt: Date | null;
}

/** What a driver's reader returns for a table. */
export interface TableCounts {
  /** One entry per group that has rows, in any order (core orders them). */
  readonly groups: readonly GroupCounts[];
  /** Who the in-work figures cover. */
  readonly inWorkScope: InWorkScope;
  /**
   * For people: what the in-work figures cannot see on this database and form, if anything
   * (for example "SQLite advisory keys live in the process that took them: only this process's
   * keys are counted").
   */
  readonly inWorkLimit?: string;
}

/** What {@link QueueStatusReader.listInWork} is asked. */
export interface InWorkQuery {
  /** The host's clock (leases are compared with it). */
  readonly now: Date;
  /** List at most this many rows (a whole number, at least 1). */
  readonly limit: number;
  /** Only this group (`null`: rows without a group); every group when absent. */
  readonly group?: string | null;
}

/** What holds a row in work. The fields a database cannot tell are absent. */
export interface InWorkHolder {
  /** The table's claim form. */
  readonly form: ClaimFormName;
  /**
   * The database session that holds the row lock or the advisory key: a PostgreSQL backend pid,
   * a MySQL/MariaDB connection id, as text. `"this process"` for a key this process holds.
   */
  readonly session?: string;
  /** The lease's expiry (lease form). */
  readonly lockedUntil?: Date;
  /** The rendered advisory key (advisory form). */
  readonly key?: string;
}

/** A row in work and what holds it. */
export interface InWorkRow {
  /** The row's id. */
  readonly id: RowId;
  /** Its group (`null` without one). */
  readonly group: string | null;
  /** Its attempt column's value, where the table has one. */
  readonly attempt?: number;
  /** What holds it. */
  readonly holder: InWorkHolder;
}

/**
 * The optional driver capability behind {@link readQueueStatus} and {@link listInWork}. Every
 * statement is read-only; the driver builds them in one SQL module per dialect
 * (`status-sql.ts` beside its `sql.ts`), quoting every identifier.
 */
export interface QueueStatusReader {
  /** Counts the rows of `table` by group (see {@link GroupCounts}), each figure up to `query.cap`. */
  countGroups(table: TableDefinition, query: StatusQuery): Promise<TableCounts>;
  /** Lists up to `query.limit` rows in work and what holds each, oldest claim order first. */
  listInWork(table: TableDefinition, query: InWorkQuery): Promise<readonly InWorkRow[]>;
}

/**
 * One group's counts from a row of a reader's grouped status statement (columns `grp`, `due`,
 * `delayed`, `in_work`, `dead`, `processed`), each figure capped at `cap`: above it, the cap with
 * `capped: true`. `inWorkCapped` marks the in-work figure capped where the reader's own search for
 * rows in work stopped at the cap; `oldestDueAt` is the row's `oldest_due_at`, decoded by the
 * driver (each client returns it in its own type).
 */
export function groupCountsOf(
  row: Readonly<Record<string, unknown>>,
  cap: number,
  oldestDueAt: Date | null,
  inWorkCapped = false,
): GroupCounts {
  const capped = (value: unknown, more = false): CappedCount => {
    const count = Number(value ?? 0);
    return count > cap ? { count: cap, capped: true } : { count, capped: more };
  };
  return {
    group: row.grp === null || row.grp === undefined ? null : String(row.grp),
    due: capped(row.due),
    delayed: capped(row.delayed),
    inWork: capped(row.in_work, inWorkCapped),
    dead: capped(row.dead),
    processed: capped(row.processed),
    oldestDueAt,
  };
}

/** What a reader read of one row in work (columns `id`, `grp`, `attempt`), with its holder's values decoded. */
export interface InWorkValues {
  readonly id: unknown;
  readonly grp: unknown;
  readonly attempt: unknown;
  /** The holding session, where the database tells. */
  readonly session?: unknown;
  /** The lease's expiry (lease form), decoded by the driver. */
  readonly lockedUntil?: Date | null;
  /** The rendered advisory key (advisory form). */
  readonly key?: unknown;
}

/** The {@link InWorkRow} of `table` from what the reader read; the holder's fields that are absent or NULL stay absent. */
export function inWorkRowOf(table: TableDefinition, values: InWorkValues): InWorkRow {
  const holder: { -readonly [K in keyof InWorkHolder]: InWorkHolder[K] } = { form: table.form };
  if (values.session !== null && values.session !== undefined) holder.session = String(values.session);
  if (values.lockedUntil instanceof Date) holder.lockedUntil = values.lockedUntil;
  if (values.key !== null && values.key !== undefined) holder.key = String(values.key);
  const entry: InWorkRow = {
    id: values.id as RowId,
    group: values.grp === null || values.grp === undefined ? null : String(values.grp),
    holder,
  };
  return values.attempt === null || values.attempt === undefined
    ? entry
    : { ...entry, attempt: Number(values.attempt) };
}

/**
 * The first row of each advisory key, in the order given: a key is held once, and the database
 * cannot tell which of its rows the holder claimed.
 */
export function firstRowPerKey(rows: Iterable<InWorkRow>): InWorkRow[] {
  const keys = new Set<string | undefined>();
  const out: InWorkRow[] = [];
  for (const row of rows) {
    if (keys.has(row.holder.key)) continue;
    keys.add(row.holder.key);
    out.push(row);
  }
  return out;
}

/** What a reader's search for rows in work found: at most the limit it was given, and whether there may be more. */
export interface FoundInWork {
  /** The rows in work found, in claim order (advisory form: the first row of each key). */
  readonly rows: readonly InWorkRow[];
  /** Whether there may be more rows in work than those found (the search stopped at its limit). */
  readonly capped: boolean;
}

/**
 * The rows in work of `table` among `candidates`, the rows a reader's search returned when asked
 * for one more than `limit`, in claim order: the first `limit` of them (in the advisory form
 * only the first row of each key, see {@link firstRowPerKey}), capped where there were more.
 */
export function foundInWork(
  table: TableDefinition,
  candidates: readonly InWorkRow[],
  limit: number,
): FoundInWork {
  const rows = candidates.slice(0, limit);
  return { rows: table.form === "advisory" ? firstRowPerKey(rows) : rows, capped: candidates.length > limit };
}

/** Which rows of `table` a status read of `group` covers: every group, those without one, or the one named. */
export function groupFilterOf(
  table: TableDefinition,
  group: string | null | undefined,
): "all" | "none" | "named" {
  return group === undefined || table.columns.group === undefined ? "all" : group === null ? "none" : "named";
}
