/**
 * Operations on a queue table, the same for the API, the CLI and the dashboard: cancel queued
 * rows, remove rows, make delayed rows due now, send dead-lettered rows back ({@link redrive}),
 * delete old processed rows ({@link prune}), and read rows by state, by search and one by one.
 *
 * Every function checks its arguments first (bad input: `INVALID_ARGUMENT`, nothing written),
 * needs a driver that offers the operations capability ({@link Driver.operations}; otherwise
 * `UNSUPPORTED_FORM`), never waits on a row in work (it reports it and leaves it alone) and works
 * in bounded batches, so no statement runs long on a big table.
 *
 * @module
 */
import type { Driver } from "./driver.js";
import { InvalidArgumentError, UnsupportedFormError } from "./errors.js";
import type {
  DriverRowAction,
  OperationsDriver,
  RowFilter,
  RowHolder,
  RowSelection,
  RowState,
  StoredRow,
} from "./operations-driver.js";
import { rowStates } from "./operations-driver.js";
import { describeValue, unknownKey } from "./options-check.js";
import type { Headers, RowId } from "./rows.js";
import { defineTable, type TableDefinition } from "./table.js";

/** Where operations run: a driver, or anything that carries one (a `Broker`). */
export type OperationsTarget = Driver | { readonly driver: Driver };

/** The default number of rows one batch of an operation changes. */
export const DEFAULT_OPERATION_BATCH = 500;

/** The largest batch an operation takes. */
export const MAX_OPERATION_BATCH = 10_000;

/** The default number of rows of one page of {@link listRows}. */
export const DEFAULT_PAGE_SIZE = 50;

/** What {@link cancel}, {@link remove} and {@link retryNow} report. */
export interface RowActionResult {
  /** The rows changed (cancelled and removed rows are deleted; retried rows are due now). */
  readonly changed: readonly RowId[];
  /** The rows left untouched because they are in work. */
  readonly inWork: readonly RowId[];
  /** The ids or keys asked for that matched no row the action could change. */
  readonly missing: readonly (RowId | string)[];
}

/** Options of {@link cancel}, {@link remove} and {@link retryNow}. */
export interface RowActionOptions {
  /** Rows per batch (default {@link DEFAULT_OPERATION_BATCH}). */
  readonly batchSize?: number;
  /** Told after every batch. */
  readonly onProgress?: (progress: OperationProgress) => void;
}

/** Progress of an operation that runs in batches. */
export interface OperationProgress {
  /** Rows changed so far. */
  readonly done: number;
  /** Batches run so far. */
  readonly batches: number;
  /** How many rows the operation was asked for, when it knows (by ids or keys). */
  readonly total?: number;
}

/** Which dead rows {@link redrive} sends back. */
export type RedriveSelection =
  | { readonly ids: readonly RowId[] }
  | { readonly filter: RedriveFilter }
  | { readonly all: true };

/** A filter over dead rows: only `text` (payload text contains) for now. */
export interface RedriveFilter {
  /** Only dead rows whose payload text contains this (literal, case-sensitive). */
  readonly text?: string;
}

/** Options of {@link redrive}. */
export interface RedriveOptions {
  /** Rows per batch (default {@link DEFAULT_OPERATION_BATCH}); each batch is one transaction. */
  readonly batchSize?: number;
  /**
   * The group rows go back to on a table with groups: the dead letter does not keep a row's
   * original group. Default `null` (the NULL group, which a subscription without `group` claims).
   */
  readonly group?: string | null;
  /** Told after every batch. */
  readonly onProgress?: (progress: OperationProgress) => void;
  /** Stops between batches when aborted (what moved stays moved). */
  readonly signal?: AbortSignal;
}

/** What {@link redrive} reports. */
export interface RedriveResult {
  /** How many dead rows went back to the queue. */
  readonly redriven: number;
  /** How many batches ran. */
  readonly batches: number;
}

/** Options of {@link prune}. */
export interface PruneOptions {
  /** Delete processed rows whose `processedAt` is older than this many milliseconds. Required, at least 0. */
  readonly olderThan: number;
  /** Rows per batch (default {@link DEFAULT_OPERATION_BATCH}); each batch is one short statement. */
  readonly batchSize?: number;
  /** Told after every batch. */
  readonly onProgress?: (progress: OperationProgress) => void;
  /** Stops between batches when aborted. */
  readonly signal?: AbortSignal;
}

/** What {@link prune} reports. */
export interface PruneResult {
  /** `false` when another process was pruning the table: this one deleted nothing. */
  readonly ran: boolean;
  /** How many rows were deleted. */
  readonly deleted: number;
  /** How many batches ran. */
  readonly batches: number;
}

/** A row as operations and the dashboard show it. */
export interface QueueRow {
  /** The primary key. */
  readonly id: RowId;
  /** Its state now. */
  readonly state: RowState;
  /** Its group, or `null`. */
  readonly group: string | null;
  /** The attempt its next delivery reports (1 on a table without an attempt column). */
  readonly attempt: number;
  /** When it is due (`null`: now, or a table without `runAt`). */
  readonly runAt: Date | null;
  /** Its priority, or `null`. */
  readonly priority: number | null;
  /** When it was processed, or `null`. */
  readonly processedAt: Date | null;
  /** The lease's expiry, or `null`. */
  readonly lockedUntil: Date | null;
  /** The value of the `key` column, or `null`. */
  readonly key: string | null;
  /** The decoded payload. */
  readonly payload: unknown;
  /** The decoded headers. */
  readonly headers: Headers;
  /** What holds it, when it is in work and the database can tell. */
  readonly holder: RowHolder | undefined;
  /** Every described column as the client read it. */
  readonly row: Readonly<Record<string, unknown>>;
}

/** What {@link listRows} takes. */
export interface ListRowsOptions {
  /** Only rows in this state; every state when absent. `dead` on a table dead letter reads the dead-letter table. */
  readonly state?: RowState;
  /** Search: ids, keys, payload text, group. */
  readonly filter?: RowFilter;
  /** The cursor a previous page returned as `next`. */
  readonly after?: RowId;
  /** Rows per page (default {@link DEFAULT_PAGE_SIZE}, at most {@link MAX_OPERATION_BATCH}). */
  readonly limit?: number;
}

/** One page of {@link listRows}. */
export interface RowPage {
  /** The rows, in id order. */
  readonly rows: readonly QueueRow[];
  /** The cursor of the next page (`after`), or `undefined` on the last page. */
  readonly next: RowId | undefined;
}

/** What {@link countRows} takes. */
export interface CountRowsOptions {
  /** Only rows in this state; every state when absent. */
  readonly state?: RowState;
  /** As for {@link ListRowsOptions.filter}. */
  readonly filter?: RowFilter;
  /** Count at most this many (default 10,000). */
  readonly cap?: number;
}

/** What {@link countRows} reports. */
export interface RowCount {
  /** The number of rows, at most the cap. */
  readonly count: number;
  /** Whether the cap was reached (there may be more). */
  readonly capped: boolean;
}

/** What {@link rowDetail} takes. */
export interface RowDetailOptions {
  /** Read the row from the dead-letter table (a table dead letter's dead rows have its ids). */
  readonly dead?: boolean;
}

const rowFilterKeys: readonly string[] = Object.freeze(["ids", "keys", "text", "group"]);
const actionOptionKeys: readonly string[] = Object.freeze(["batchSize", "onProgress"]);
const redriveOptionKeys: readonly string[] = Object.freeze(["batchSize", "group", "onProgress", "signal"]);
const pruneOptionKeys: readonly string[] = Object.freeze(["olderThan", "batchSize", "onProgress", "signal"]);
const listOptionKeys: readonly string[] = Object.freeze(["state", "filter", "after", "limit"]);
const countOptionKeys: readonly string[] = Object.freeze(["state", "filter", "cap"]);

/**
 * Cancels queued rows (due or delayed, not dead, not processed): deletes them. A row in work is
 * left untouched and reported in `inWork` — found without waiting: a row lock with `SKIP LOCKED`
 * (`NOWAIT`), a lease by its unexpired `lockedUntil`, an advisory row by a try-lock of its
 * rendered key. Ids or keys that match no queued row are reported in `missing`.
 *
 * @throws {InvalidArgumentError} on a bad selection (empty, not ids or keys, keys on a table
 * without a key column) or options; nothing is written.
 * @example
 * const { changed, inWork } = await cancel(broker, jobs, { ids: [42] });
 */
export function cancel(
  target: OperationsTarget,
  table: TableDefinition,
  selection: RowSelection,
  options: RowActionOptions = {},
): Promise<RowActionResult> {
  return runAction(target, table, selection, options, "delete", "queued", "cancel");
}

/**
 * Deletes rows in any state (queued, dead, processed) except in work, which are reported as
 * for {@link cancel}. A table dead letter's dead rows are removed through the dead-letter
 * table's own definition ({@link deadLetterTable}).
 *
 * @throws {InvalidArgumentError} as {@link cancel}.
 */
export function remove(
  target: OperationsTarget,
  table: TableDefinition,
  selection: RowSelection,
  options: RowActionOptions = {},
): Promise<RowActionResult> {
  return runAction(target, table, selection, options, "delete", "any", "remove");
}

/**
 * Makes queued rows due now (`runAt` = now), leaving rows in work untouched and reporting them.
 *
 * @throws {InvalidArgumentError} as {@link cancel}, and on a table without a `runAt` column.
 */
export function retryNow(
  target: OperationsTarget,
  table: TableDefinition,
  selection: RowSelection,
  options: RowActionOptions = {},
): Promise<RowActionResult> {
  if (table.columns.runAt === undefined) {
    return Promise.reject(
      invalid(table, "retryNow needs a runAt column", "Name columns.runAt: without it every row is due now."),
    );
  }
  return runAction(target, table, selection, options, "makeDue", "queued", "retryNow");
}

/**
 * Sends dead-lettered rows back to the queue — by ids, by filter, or all — in bounded batches,
 * each one transaction: the attempt reset to 1, due at once, in their id order (so the order
 * they died in is kept). On a group dead letter the rows move to `options.group` (default the
 * NULL group); on a table dead letter they are inserted into `table` (new ids, in order) and
 * deleted from the dead-letter table.
 *
 * @throws {InvalidArgumentError} when the table has no dead letter, or on bad options or filter.
 * @example
 * const { redriven } = await redrive(broker, jobs, { all: true }, { onProgress: (p) => log(p.done) });
 */
export async function redrive(
  target: OperationsTarget,
  table: TableDefinition,
  selection: RedriveSelection,
  options: RedriveOptions = {},
): Promise<RedriveResult> {
  checkOptions(table, options, redriveOptionKeys, "redrive");
  const batchSize = checkBatchSize(table, options.batchSize);
  const deadLetter = table.deadLetter;
  if (deadLetter === undefined) {
    throw invalid(
      table,
      "redrive needs a table with a dead letter",
      "Set maxAttempts and deadLetter on the table description.",
    );
  }
  const group = options.group ?? null;
  if (group !== null && typeof group !== "string") {
    throw invalid(
      table,
      `redrive's group must be a string or null, got ${describeValue(group)}`,
      "Name a group.",
    );
  }
  if (group !== null && table.columns.group === undefined) {
    throw invalid(table, "redrive names a group but the table has no group column", "Leave out group.");
  }
  let ids: readonly RowId[] | undefined;
  let text: string | undefined;
  if (typeof selection !== "object" || selection === null) {
    throw invalid(table, "redrive takes { ids }, { filter } or { all: true }", "For example { all: true }.");
  }
  if ("ids" in selection) {
    checkKeys(table, selection, ["ids"], "redrive's selection");
    ids = checkIds(table, selection.ids);
  } else if ("filter" in selection) {
    checkKeys(table, selection, ["filter"], "redrive's selection");
    const filter = selection.filter;
    if (typeof filter !== "object" || filter === null)
      throw invalid(table, "redrive's filter must be an object", "Give { text }.");
    checkKeys(table, filter, ["text"], "redrive's filter");
    if (filter.text !== undefined) text = checkText(table, filter.text);
  } else if ("all" in selection) {
    checkKeys(table, selection, ["all"], "redrive's selection");
    if (selection.all !== true) throw invalid(table, "redrive's all must be true", "Give { all: true }.");
  } else {
    throw invalid(table, "redrive takes { ids }, { filter } or { all: true }", "For example { all: true }.");
  }
  const driver = operationsOf(target, table);
  const from = "group" in deadLetter ? { group: deadLetter.group } : { table: deadLetter.table };
  let redriven = 0;
  let batches = 0;
  const chunks = ids === undefined ? undefined : chunk(ids, batchSize);
  for (;;) {
    if (options.signal?.aborted === true) break;
    const chunkIds = chunks?.[batches];
    if (chunks !== undefined && chunkIds === undefined) break;
    const moved = await driver.redrive(table, {
      from,
      ...(chunkIds === undefined ? {} : { ids: chunkIds }),
      ...(text === undefined ? {} : { text }),
      group,
      limit: batchSize,
      now: new Date(),
    });
    batches += 1;
    redriven += moved;
    options.onProgress?.({ done: redriven, batches, ...(ids === undefined ? {} : { total: ids.length }) });
    if (chunks === undefined && moved < batchSize) break;
  }
  return { redriven, batches };
}

/**
 * Deletes processed rows of a `processedAt` table whose `processedAt` is older than
 * `olderThan` milliseconds, oldest first, in bounded batches (one short statement each, never
 * one long one that locks the table), by one process at a time: while another process prunes
 * the table, this call deletes nothing and reports `ran: false`. (PostgreSQL: a session advisory
 * lock; MySQL/MariaDB: `GET_LOCK`; SQLite: a lock row — see the driver's README.)
 *
 * @throws {InvalidArgumentError} on a table without `processedAt`, a missing or negative
 * period, or a bad batch size; nothing is written.
 * @example
 * await prune(broker, jobs, { olderThan: 7 * 24 * 3600_000 });
 */
export async function prune(
  target: OperationsTarget,
  table: TableDefinition,
  options: PruneOptions,
): Promise<PruneResult> {
  if (typeof options !== "object" || options === null) {
    throw invalid(table, "prune takes { olderThan }", "For example { olderThan: 7 * 24 * 3600_000 }.");
  }
  checkOptions(table, options, pruneOptionKeys, "prune");
  const batchSize = checkBatchSize(table, options.batchSize);
  if (table.columns.processedAt === undefined) {
    throw invalid(
      table,
      "prune needs a processedAt column: without one an ack deletes the row",
      "Name columns.processedAt, or leave the table out of pruning.",
    );
  }
  const olderThan = options.olderThan;
  if (typeof olderThan !== "number" || !Number.isFinite(olderThan) || olderThan < 0) {
    throw invalid(
      table,
      `prune's olderThan must be a number of milliseconds, at least 0, got ${describeValue(olderThan)}`,
      "For example olderThan: 7 * 24 * 3600_000 (a week).",
    );
  }
  const driver = operationsOf(target, table);
  const lock = await driver.lockPrune(table);
  if (lock === null) return { ran: false, deleted: 0, batches: 0 };
  let deleted = 0;
  let batches = 0;
  try {
    const before = new Date(Date.now() - olderThan);
    for (;;) {
      if (options.signal?.aborted === true) break;
      const count = await driver.prune(table, { before, limit: batchSize });
      batches += 1;
      deleted += count;
      options.onProgress?.({ done: deleted, batches });
      if (count < batchSize) break;
    }
  } finally {
    await lock.release();
  }
  return { ran: true, deleted, batches };
}

/**
 * One page of rows, in id order, by state and search (`filter`): keyset pagination, so a page
 * costs the same on the first page and the millionth. Pass the page's `next` as `after` for the
 * next page. `state: "dead"` on a table dead letter reads the dead-letter table (ids are its ids).
 *
 * @throws {InvalidArgumentError} on unknown filter fields or a bad state, cursor or limit.
 */
export async function listRows(
  target: OperationsTarget,
  table: TableDefinition,
  options: ListRowsOptions = {},
): Promise<RowPage> {
  checkOptions(table, options, listOptionKeys, "listRows");
  const state = checkState(table, options.state);
  const filter = checkFilter(table, options.filter);
  const limit = checkPositive(table, options.limit ?? DEFAULT_PAGE_SIZE, "limit", MAX_OPERATION_BATCH);
  if (options.after !== undefined) checkIds(table, [options.after]);
  const driver = operationsOf(target, table);
  const { read, deadGroup, readState } = readTarget(table, state);
  const now = new Date();
  const rows = await driver.list(read, {
    ...(readState === undefined ? {} : { state: readState }),
    filter,
    deadGroup,
    ...(options.after === undefined ? {} : { after: options.after }),
    limit: limit + 1,
    now,
  });
  const page = rows.slice(0, limit).map((row) => queueRow(read, row, deadGroup, now, state === "dead"));
  const last = page[page.length - 1];
  return { rows: page, next: rows.length > limit && last !== undefined ? last.id : undefined };
}

/**
 * How many rows are in a state (or match a filter), counting at most `cap`, so that a count
 * stays cheap on millions of rows.
 *
 * @throws {InvalidArgumentError} as {@link listRows}.
 */
export async function countRows(
  target: OperationsTarget,
  table: TableDefinition,
  options: CountRowsOptions = {},
): Promise<RowCount> {
  checkOptions(table, options, countOptionKeys, "countRows");
  const state = checkState(table, options.state);
  const filter = checkFilter(table, options.filter);
  const cap = checkPositive(table, options.cap ?? 10_000, "cap", Number.MAX_SAFE_INTEGER);
  const driver = operationsOf(target, table);
  const { read, deadGroup, readState } = readTarget(table, state);
  const count = await driver.count(read, {
    ...(readState === undefined ? {} : { state: readState }),
    filter,
    deadGroup,
    cap,
    now: new Date(),
  });
  return { count, capped: count >= cap };
}

/**
 * One row with its payload, headers, attempt, run time and what holds it (where the database
 * can tell), or `undefined` when there is none.
 *
 * @throws {InvalidArgumentError} on a bad id.
 */
export async function rowDetail(
  target: OperationsTarget,
  table: TableDefinition,
  id: RowId,
  options: RowDetailOptions = {},
): Promise<QueueRow | undefined> {
  checkOptions(table, options, ["dead"], "rowDetail");
  checkIds(table, [id]);
  const dead = options.dead === true;
  if (dead && (table.deadLetter === undefined || !("table" in table.deadLetter))) {
    throw invalid(table, "rowDetail's dead: true needs a table dead letter", "Leave out dead.");
  }
  const { read, deadGroup } = readTarget(table, dead ? "dead" : undefined);
  const driver = operationsOf(target, table);
  const now = new Date();
  const row =
    driver.detail === undefined
      ? (await driver.list(read, { filter: { ids: [id] }, deadGroup: null, limit: 1, now }))[0]
      : await driver.detail(read, id, now);
  return row === undefined ? undefined : queueRow(read, row, deadGroup, now, dead);
}

/**
 * The definition of a table's dead-letter table (same columns and form, no dead letter of its
 * own), or `undefined` when the table has none or dead-letters to a group.
 */
export function deadLetterTable(table: TableDefinition): TableDefinition | undefined {
  const deadLetter = table.deadLetter;
  if (deadLetter === undefined || !("table" in deadLetter)) return undefined;
  const { maxAttempts: _maxAttempts, deadLetter: _deadLetter, ...rest } = table.description;
  return defineTable({ ...rest, name: deadLetter.table });
}

/**
 * The name of the table's `key` column, if it has one. A key names queued rows only: a claim
 * writes NULL into it, so a row in work (or retried, dead, processed) has no key.
 */
export function keyColumnOf(table: TableDefinition): string | undefined {
  return table.columns.key;
}

// ---------------------------------------------------------------------------------------------

async function runAction(
  target: OperationsTarget,
  table: TableDefinition,
  selection: RowSelection,
  options: RowActionOptions,
  kind: DriverRowAction["kind"],
  scope: DriverRowAction["scope"],
  call: string,
): Promise<RowActionResult> {
  checkOptions(table, options, actionOptionKeys, call);
  const batchSize = checkBatchSize(table, options.batchSize);
  const checked = checkSelection(table, selection, call);
  const driver = operationsOf(target, table);
  const deadGroup = deadGroupOf(table);
  const changed: RowId[] = [];
  const inWork: RowId[] = [];
  const missing: (RowId | string)[] = [];
  const values: readonly (RowId | string)[] = "ids" in checked ? checked.ids : checked.keys;
  let batches = 0;
  for (const part of chunk(values, batchSize)) {
    const partSelection: RowSelection =
      "ids" in checked ? { ids: part as RowId[] } : { keys: part as string[] };
    const result = await driver.act(table, {
      kind,
      selection: partSelection,
      scope,
      deadGroup,
      now: new Date(),
    });
    changed.push(...result.changed);
    inWork.push(...result.inWork);
    if ("ids" in checked) {
      const seen = new Set([...result.changed, ...result.inWork].map(String));
      for (const id of part) if (!seen.has(String(id))) missing.push(id);
    } else {
      const matched = new Set(result.keys ?? []);
      for (const key of part) if (!matched.has(String(key))) missing.push(key);
    }
    batches += 1;
    options.onProgress?.({ done: changed.length, batches, total: values.length });
  }
  return { changed, inWork, missing };
}

function operationsOf(target: OperationsTarget, table: TableDefinition): OperationsDriver {
  const driver = "open" in target ? target : target.driver;
  const operations = driver.operations;
  if (operations === undefined) {
    throw new UnsupportedFormError(
      `The ${driver.name} driver does not offer operations (cancel, redrive, prune, row listing): it has no \`operations\` capability.`,
      { table: table.name },
    );
  }
  return operations;
}

function deadGroupOf(table: TableDefinition): string | null {
  const deadLetter = table.deadLetter;
  return deadLetter !== undefined && "group" in deadLetter ? deadLetter.group : null;
}

function readTarget(
  table: TableDefinition,
  state: RowState | undefined,
): { read: TableDefinition; deadGroup: string | null; readState: RowState | undefined } {
  const deadTable = state === "dead" ? deadLetterTable(table) : undefined;
  if (deadTable !== undefined) return { read: deadTable, deadGroup: null, readState: undefined };
  return { read: table, deadGroup: deadGroupOf(table), readState: state };
}

function queueRow(
  table: TableDefinition,
  stored: StoredRow,
  deadGroup: string | null,
  now: Date,
  dead: boolean,
): QueueRow {
  const { runAt, priority, processedAt, lockedUntil } = table.columns;
  const keyColumn = keyColumnOf(table);
  const read = (column: string | undefined): unknown => (column === undefined ? null : stored.row[column]);
  const runAtValue = timeValue(read(runAt));
  const processedAtValue = timeValue(read(processedAt));
  const priorityValue = read(priority);
  const keyValue = read(keyColumn);
  let state: RowState;
  if (dead) state = "dead";
  else if (processedAtValue !== null) state = "processed";
  else if (deadGroup !== null && stored.group === deadGroup) state = "dead";
  else if (stored.inWork) state = "inWork";
  else if (runAtValue !== null && runAtValue.getTime() > now.getTime()) state = "delayed";
  else state = "due";
  return {
    id: stored.id,
    state,
    group: stored.group,
    attempt: stored.attempt,
    runAt: runAtValue,
    priority: priorityValue === null || priorityValue === undefined ? null : Number(priorityValue),
    processedAt: processedAtValue,
    lockedUntil: timeValue(read(lockedUntil)),
    key: keyValue === null || keyValue === undefined ? null : String(keyValue),
    payload: stored.payload,
    headers: stored.headers,
    holder: stored.holder,
    row: stored.row,
  };
}

/** A time column's value as a `Date` (SQLite stores epoch milliseconds), or `null`. */
function timeValue(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  if (typeof value === "number" || typeof value === "bigint") return new Date(Number(value));
  const parsed = new Date(String(value));
  return Number.isNaN(parsed.getTime()) ? null : parsed;
}

function chunk<T>(values: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

function invalid(table: TableDefinition, problem: string, fix: string): InvalidArgumentError {
  return new InvalidArgumentError(`Table "${table.name}": ${problem}. ${fix}`, { table: table.name });
}

function checkKeys(table: TableDefinition, given: object, allowed: readonly string[], what: string): void {
  const unknown = unknownKey(given, allowed);
  if (unknown !== undefined)
    throw invalid(table, `${what}: unknown field \`${unknown.key}\``, unknown.advice);
}

function checkOptions(
  table: TableDefinition,
  options: object,
  allowed: readonly string[],
  call: string,
): void {
  if (typeof options !== "object" || options === null) {
    throw invalid(table, `${call}'s options must be an object, got ${describeValue(options)}`, "Pass {}.");
  }
  checkKeys(table, options, allowed, `${call}'s options`);
  const progress = (options as { onProgress?: unknown }).onProgress;
  if (progress !== undefined && typeof progress !== "function") {
    throw invalid(table, `${call}'s onProgress must be a function`, "Pass a function, or leave it out.");
  }
}

function checkPositive(table: TableDefinition, value: unknown, name: string, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    throw invalid(
      table,
      `${name} must be a whole number from 1 to ${max}, got ${describeValue(value)}`,
      `Set ${name} to 1 or more.`,
    );
  }
  return value;
}

function checkBatchSize(table: TableDefinition, value: unknown): number {
  return checkPositive(table, value ?? DEFAULT_OPERATION_BATCH, "batchSize", MAX_OPERATION_BATCH);
}

function checkIds(table: TableDefinition, ids: unknown): readonly RowId[] {
  if (!Array.isArray(ids) || ids.length === 0) {
    throw invalid(table, `ids must be a non-empty array, got ${describeValue(ids)}`, "Give the rows' ids.");
  }
  for (const id of ids) {
    const ok =
      typeof id === "bigint" ||
      (typeof id === "number" && Number.isSafeInteger(id)) ||
      (typeof id === "string" && id !== "");
    if (!ok)
      throw invalid(
        table,
        `${describeValue(id)} is not a row id`,
        "Ids are whole numbers or non-empty strings.",
      );
  }
  return ids as RowId[];
}

function checkText(table: TableDefinition, text: unknown): string {
  if (typeof text !== "string" || text === "") {
    throw invalid(
      table,
      `text must be a non-empty string, got ${describeValue(text)}`,
      "Give the text to find.",
    );
  }
  return text;
}

function checkKeyValues(table: TableDefinition, keys: unknown): readonly string[] {
  if (keyColumnOf(table) === undefined) {
    throw invalid(
      table,
      "keys name rows by their key column but the table has none",
      "Name columns.key, or select by ids.",
    );
  }
  if (
    !Array.isArray(keys) ||
    keys.length === 0 ||
    keys.some((key) => typeof key !== "string" || key === "")
  ) {
    throw invalid(
      table,
      `keys must be a non-empty array of non-empty strings, got ${describeValue(keys)}`,
      "Give the keys.",
    );
  }
  return keys as string[];
}

function checkSelection(table: TableDefinition, selection: RowSelection, call: string): RowSelection {
  if (typeof selection !== "object" || selection === null) {
    throw invalid(
      table,
      `${call} takes { ids } or { keys }, got ${describeValue(selection)}`,
      "For example { ids: [42] }.",
    );
  }
  if ("ids" in selection) {
    checkKeys(table, selection, ["ids"], `${call}'s selection`);
    return { ids: checkIds(table, selection.ids) };
  }
  if ("keys" in selection) {
    checkKeys(table, selection, ["keys"], `${call}'s selection`);
    return { keys: checkKeyValues(table, selection.keys) };
  }
  throw invalid(table, `${call} takes { ids } or { keys }`, "For example { ids: [42] }.");
}

function checkState(table: TableDefinition, state: unknown): RowState | undefined {
  if (state === undefined) return undefined;
  if (typeof state !== "string" || !rowStates.includes(state as RowState)) {
    throw invalid(table, `state ${describeValue(state)} is unknown`, `Use one of ${rowStates.join(", ")}.`);
  }
  if (state === "processed" && table.columns.processedAt === undefined) {
    throw invalid(table, "state processed needs a processedAt column", "Leave out state.");
  }
  if (state === "dead" && table.deadLetter === undefined) {
    throw invalid(table, "state dead needs a dead letter", "Leave out state.");
  }
  return state as RowState;
}

function checkFilter(table: TableDefinition, filter: unknown): RowFilter {
  if (filter === undefined) return {};
  if (typeof filter !== "object" || filter === null) {
    throw invalid(
      table,
      `filter must be an object, got ${describeValue(filter)}`,
      'For example { text: "order-7" }.',
    );
  }
  checkKeys(table, filter, rowFilterKeys, "filter");
  const given = filter as RowFilter;
  const out: { -readonly [K in keyof RowFilter]: RowFilter[K] } = {};
  if (given.ids !== undefined) out.ids = checkIds(table, given.ids);
  if (given.keys !== undefined) out.keys = checkKeyValues(table, given.keys);
  if (given.text !== undefined) out.text = checkText(table, given.text);
  if (given.group !== undefined) {
    if (table.columns.group === undefined)
      throw invalid(table, "filter.group needs a group column", "Leave out group.");
    if (given.group !== null && typeof given.group !== "string") {
      throw invalid(
        table,
        `filter.group must be a string or null, got ${describeValue(given.group)}`,
        "Name a group.",
      );
    }
    out.group = given.group;
  }
  return out;
}
