/**
 * What a queue table holds right now, per group: due, delayed, in work, dead, processed, the
 * oldest due row's age, and what holds each row in work. {@link readQueueStatus} and
 * {@link listInWork} are the one reading the command line (`rowclaim status`) and the dashboard
 * share; they run over the optional driver capability {@link QueueStatusReader}
 * ({@link Driver.queueStatus}), which counts by each database's own means per form:
 *
 * - row lock: rows locked now (PostgreSQL: the row's locker in `pg_locks`; MariaDB/MySQL: a
 *   `SKIP LOCKED` probe);
 * - lease: rows whose `lockedUntil` is in the future;
 * - advisory: keys held now (PostgreSQL: advisory entries of `pg_locks`; MariaDB/MySQL:
 *   `IS_USED_LOCK` of each row's rendered key; SQLite: the keys this process holds).
 *
 * Every count is capped ({@link QueueStatusOptions.cap}): a figure above the cap is reported as
 * the cap with `capped: true` ("10000+"). The built-in readers count every group in one pass over
 * the table; a dashboard over tables of millions of rows caches the result.
 *
 * @module
 */
import { readControlState } from "./control-commands.js";
import type { ControlState } from "./controls.js";
import type { Driver } from "./driver.js";
import { InvalidArgumentError, UnsupportedFormError } from "./errors.js";
import type { RowId } from "./rows.js";
import { type ClaimFormName, defineTable, type TableDefinition } from "./table.js";

/** The cap {@link readQueueStatus} counts to unless told otherwise. */
export const DEFAULT_STATUS_CAP = 10_000;

/** The number of rows {@link listInWork} lists unless told otherwise. */
export const DEFAULT_IN_WORK_LIMIT = 100;

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

/** One group's status, as {@link readQueueStatus} returns it. */
export interface GroupStatus extends GroupCounts {
  /**
   * How long the oldest due row has been due, in milliseconds (0 for a row due without a
   * `runAt`), or `null` when nothing is due.
   */
  readonly oldestDueAgeMs: number | null;
  /** Whether claims of this group are paused now: the whole table, or this group on its own (`broker.pause`). */
  readonly paused: boolean;
}

/** A table's status, as {@link readQueueStatus} returns it. */
export interface QueueStatus {
  /** The table's name. */
  readonly table: string;
  /** Its claim form. */
  readonly form: ClaimFormName;
  /** When it was read (the host's clock). */
  readonly at: Date;
  /** The cap each count stopped at. */
  readonly cap: number;
  /** Who the in-work figures cover. */
  readonly inWorkScope: InWorkScope;
  /** What the in-work figures cannot see, if anything (see {@link TableCounts.inWorkLimit}). */
  readonly inWorkLimit: string | undefined;
  /**
   * One entry per group with rows: rows without a group first, then groups by name. A
   * dead-letter table's rows are counted as dead in their own group.
   */
  readonly groups: readonly GroupStatus[];
  /**
   * The table's run-time controls (pauses, rate counters and their waits), where the driver keeps
   * them (`capabilities.controls`); `undefined` where it does not.
   */
  readonly controls: ControlState | undefined;
}

/** Options of {@link readQueueStatus}. */
export interface QueueStatusOptions {
  /** Count each figure up to this many rows. Default {@link DEFAULT_STATUS_CAP}. */
  readonly cap?: number;
  /** The clock to compare with. Default: now. */
  readonly now?: Date;
}

/** Options of {@link listInWork}. */
export interface InWorkOptions {
  /** List at most this many rows. Default {@link DEFAULT_IN_WORK_LIMIT}. */
  readonly limit?: number;
  /** Only this group (`null`: rows without a group). Default: every group. */
  readonly group?: string | null;
  /** The clock to compare with. Default: now. */
  readonly now?: Date;
}

/** Writes a capped count for people: `"42"`, or `"10000+"` when counting stopped at the cap. */
export function formatCount(count: CappedCount): string {
  return count.capped ? `${count.count}+` : String(count.count);
}

/**
 * Reads the status of `table` through the driver's {@link QueueStatusReader}: per group, due,
 * delayed, in work, dead (the dead-letter group's rows, or the dead-letter table's), processed,
 * the oldest due row's age, and, where the driver keeps run-time controls, what is paused and
 * the rate limits' waits. Read-only.
 *
 * @throws {UnsupportedFormError} when the driver has no {@link Driver.queueStatus}.
 * @throws {InvalidArgumentError} for a cap that is not a whole number of at least 1 (nothing is read).
 */
export async function readQueueStatus(
  driver: Driver,
  table: TableDefinition,
  options: QueueStatusOptions = {},
): Promise<QueueStatus> {
  const reader = readerOf(driver, table);
  const cap = wholeNumber(options.cap ?? DEFAULT_STATUS_CAP, "cap");
  const now = options.now ?? new Date();
  const target = table.deadLetter;
  const query: StatusQuery =
    target !== undefined && "group" in target ? { now, cap, deadGroup: target.group } : { now, cap };
  const counts = await reader.countGroups(table, query);
  const byGroup = new Map<string | null, GroupCounts>();
  for (const group of counts.groups) byGroup.set(group.group, group);
  if (target !== undefined && "table" in target) {
    // Every unprocessed row of the dead-letter table is dead, in its own group.
    const deadTable = deadLetterTableOf(table, target.table);
    const dead = await reader.countGroups(deadTable, { now, cap });
    for (const group of dead.groups) {
      const own = byGroup.get(group.group) ?? emptyGroup(group.group);
      const moved = sum(cap, group.due, group.delayed, group.inWork, group.dead);
      if (moved.count === 0 && !moved.capped) continue;
      byGroup.set(group.group, { ...own, dead: sum(cap, own.dead, moved) });
    }
  }
  const controls =
    driver.capabilities.controls === true && driver.controls !== undefined
      ? await readControlState(driver, table, now.getTime())
      : undefined;
  const paused = (group: string | null): boolean =>
    controls !== undefined && (controls.paused || (group !== null && controls.pausedGroups.includes(group)));
  const groups = [...byGroup.values()].sort(byGroupName).map(
    (group): GroupStatus => ({
      ...group,
      paused: paused(group.group),
      oldestDueAgeMs:
        group.oldestDueAt === null
          ? group.due.count > 0
            ? 0
            : null
          : Math.max(0, now.getTime() - group.oldestDueAt.getTime()),
    }),
  );
  return {
    table: table.name,
    form: table.form,
    at: now,
    cap,
    inWorkScope: counts.inWorkScope,
    inWorkLimit: counts.inWorkLimit,
    groups,
    controls,
  };
}

/**
 * Lists the rows of `table` in work now and what holds each (backend pid, connection id, lease
 * expiry, advisory key), through the driver's {@link QueueStatusReader}. Read-only.
 *
 * @throws {UnsupportedFormError} when the driver has no {@link Driver.queueStatus}.
 * @throws {InvalidArgumentError} for a limit that is not a whole number of at least 1 (nothing is read).
 */
export async function listInWork(
  driver: Driver,
  table: TableDefinition,
  options: InWorkOptions = {},
): Promise<readonly InWorkRow[]> {
  const reader = readerOf(driver, table);
  const limit = wholeNumber(options.limit ?? DEFAULT_IN_WORK_LIMIT, "limit");
  const now = options.now ?? new Date();
  const query: InWorkQuery =
    options.group === undefined ? { now, limit } : { now, limit, group: options.group };
  return reader.listInWork(table, query);
}

function readerOf(driver: Driver, table: TableDefinition): QueueStatusReader {
  const reader = driver.queueStatus;
  if (reader === undefined)
    throw new UnsupportedFormError(
      `The ${driver.name} driver cannot read a table's status (it has no queueStatus reader); update the driver.`,
      { table: table.name },
    );
  return reader;
}

function wholeNumber(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new InvalidArgumentError(
      `The status ${name} must be a whole number of at least 1 (got ${String(value)}).`,
    );
  return value;
}

/** The dead-letter table as a table of the same columns (its own rows are never dead-lettered again). */
function deadLetterTableOf(table: TableDefinition, name: string): TableDefinition {
  const { deadLetter: _target, maxAttempts: _cap, ...rest } = table.description;
  return defineTable({ ...rest, name });
}

function emptyGroup(group: string | null): GroupCounts {
  const none: CappedCount = { count: 0, capped: false };
  return { group, due: none, delayed: none, inWork: none, dead: none, processed: none, oldestDueAt: null };
}

function sum(cap: number, ...counts: readonly CappedCount[]): CappedCount {
  let count = 0;
  let capped = false;
  for (const part of counts) {
    count += part.count;
    capped ||= part.capped;
  }
  return count > cap ? { count: cap, capped: true } : { count, capped };
}

function byGroupName(a: GroupCounts, b: GroupCounts): number {
  if (a.group === b.group) return 0;
  if (a.group === null) return -1;
  if (b.group === null) return 1;
  return a.group < b.group ? -1 : 1;
}
