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
import type {
  CappedCount,
  GroupCounts,
  InWorkQuery,
  InWorkRow,
  InWorkScope,
  QueueStatusReader,
  StatusQuery,
  TableCounts,
} from "./queue-status-reader.js";
import { type ClaimFormName, defineTable, type TableDefinition } from "./table.js";

/** The cap {@link readQueueStatus} counts to unless told otherwise. */
export const DEFAULT_STATUS_CAP = 10_000;

/** The number of rows {@link listInWork} lists unless told otherwise. */
export const DEFAULT_IN_WORK_LIMIT = 100;

export type {
  CappedCount,
  GroupCounts,
  InWorkHolder,
  InWorkQuery,
  InWorkRow,
  InWorkScope,
  QueueStatusReader,
  StatusQuery,
  TableCounts,
} from "./queue-status-reader.js";

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
