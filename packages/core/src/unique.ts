/**
 * Unique jobs: `publish(table, payload, { key, mode, period })` keeps at most one queued row per
 * key, enforced by the database through a unique index on the table's `key` column. The types
 * here are what callers pass and get back, what the broker hands a driver, and the one place
 * that turns a mode into what the driver does on a conflict (keep or replace).
 *
 * A row gives up its key when it is claimed: the claim writes NULL into the key column in the
 * same committed statement that takes the row (lease and advisory forms), so a row in work, a
 * retried row and a processed row never hold the key, and a publish of the key while its row is
 * in work queues a new row behind it without touching (or waiting for) the running one.
 *
 * @module
 */
import { InvalidArgumentError } from "./errors.js";
import { describeValue } from "./option-keys.js";
import type { PublishRow, RowId } from "./rows.js";
import type { TableDefinition } from "./table.js";

/**
 * What a publish does when a row of its key is already queued:
 *
 * - `"keep"` (default): keeps the queued row as it is; the new payload is dropped.
 * - `"replace"`: replaces the queued row's payload (and headers, priority) and its run time
 *   (`runAt`, or now).
 * - `"debounce"`: replaces the payload and pushes the run time back to now + `period`: the row
 *   runs once the key has been quiet for `period` ms.
 * - `"throttle"`: at most one row per `period`: a new row is due at the end of the current
 *   period window (windows of `period` ms counted from the Unix epoch); publishes while it is
 *   queued keep it.
 */
export type UniqueMode = "keep" | "replace" | "debounce" | "throttle";

/** Every {@link UniqueMode}. */
export const uniqueModes: readonly UniqueMode[] = Object.freeze(["keep", "replace", "debounce", "throttle"]);

/** The options that make a publish unique. The table needs a `key` column. */
export interface UniqueOptions {
  /** The row's key: at most one queued row of the table holds it. A non-empty string. */
  readonly key: string;
  /** What a publish does when a row of the key is queued. Default `"keep"`. */
  readonly mode?: UniqueMode;
  /** The debounce delay or throttle window, in milliseconds (a positive number). Debounce and throttle only, and needed there. */
  readonly period?: number;
}

/** What a unique publish did. */
export type PublishOutcome = "inserted" | "kept" | "replaced";

/** What a publish with a `key` returns: the row's id and what happened to it. */
export interface PublishResult {
  /** The id of the row that now holds the key (the new row, or the queued one kept or replaced). */
  readonly id: RowId;
  /** `"inserted"`: a new row; `"kept"`: a queued row of the key was left as it was; `"replaced"`: its payload and run time were replaced. */
  readonly outcome: PublishOutcome;
}

/** What a driver does with a unique row when a queued row holds its key. */
export type UniqueConflict = "keep" | "replace";

/** A row to insert with its key, as the broker hands it to {@link Driver.publishUnique}. */
export interface UniquePublishRow extends PublishRow {
  /** The key to write into the key column; `null` for a row published without a key (a plain insert). */
  readonly key: string | null;
  /**
   * On a queued row holding the key: `"keep"` leaves it and reports `kept`; `"replace"` writes
   * this row's payload, run time, priority and headers into it and reports `replaced`.
   */
  readonly onConflict: UniqueConflict;
}

/**
 * How often a driver retries one unique row when the row holding its key disappears between
 * its insert and its read (claimed, or finished), or the database reports a serialization
 * failure, deadlock or duplicate key race, before it gives up with the last error.
 */
export const UNIQUE_PUBLISH_ATTEMPTS = 50;

/**
 * Checks one message's unique options against the table and turns its mode into what the
 * driver does: the key, the conflict action and the run time to write.
 *
 * @throws {InvalidArgumentError} an unknown mode, a key on a table without a key column, a
 * key that is not a non-empty string, a period that is missing, not positive or given where the
 * mode takes none, `runAt` beside debounce or throttle, or debounce/throttle on a table
 * without a runAt column.
 * @internal used by the broker's publish.
 */
export function resolveUnique(
  table: TableDefinition,
  options: {
    readonly key?: unknown;
    readonly mode?: unknown;
    readonly period?: unknown;
    readonly runAt?: unknown;
  },
  now: Date,
): { readonly key: string | null; readonly onConflict: UniqueConflict; readonly runAt: Date | undefined } {
  const fail = (problem: string): never => {
    throw new InvalidArgumentError(`publish(${table.name}): ${problem}`, { table: table.name });
  };
  const { key, mode, period } = options;
  if (key === undefined) {
    if (mode !== undefined || period !== undefined)
      fail("mode and period are unique-publish options: give a key too.");
    return { key: null, onConflict: "keep", runAt: undefined };
  }
  if (table.columns.key === undefined)
    fail("a key is given but the table has no key column: name columns.key in the table description.");
  if (typeof key !== "string" || key === "")
    fail(`key must be a non-empty string, not ${describeValue(key)}.`);
  const chosen = mode ?? "keep";
  if (typeof chosen !== "string" || !uniqueModes.includes(chosen as UniqueMode))
    fail(`mode ${describeValue(chosen)} is unknown: use one of ${uniqueModes.join(", ")}.`);
  const timed = chosen === "debounce" || chosen === "throttle";
  if (!timed) {
    if (period !== undefined) fail(`period is given but mode "${String(chosen)}" takes none.`);
    return { key: key as string, onConflict: chosen === "replace" ? "replace" : "keep", runAt: undefined };
  }
  if (typeof period !== "number" || !Number.isFinite(period) || period <= 0)
    fail(`mode "${String(chosen)}" needs a period in milliseconds above 0, not ${describeValue(period)}.`);
  if (options.runAt !== undefined)
    fail(`runAt is given beside mode "${String(chosen)}", which computes the run time from period.`);
  if (table.columns.runAt === undefined)
    fail(`mode "${String(chosen)}" needs a runAt column: name columns.runAt in the table description.`);
  const ms = period as number;
  if (chosen === "debounce") {
    return { key: key as string, onConflict: "replace", runAt: new Date(now.getTime() + ms) };
  }
  const windowEnd = (Math.floor(now.getTime() / ms) + 1) * ms;
  return { key: key as string, onConflict: "keep", runAt: new Date(windowEnd) };
}
