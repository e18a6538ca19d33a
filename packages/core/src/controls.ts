/**
 * Run-time controls a team uses during an incident or against a slow dependency, kept in the
 * database so that every process sees them: pausing a table (or one group of it), and limiting
 * how many rows every process together claims per interval.
 *
 * They live in one control table, `rowclaim_controls` (one row per table and per group of it,
 * in the connection's default schema), which the first pause (or the first rate-limited
 * subscription) creates where it is absent; reads find nothing paused while it is absent. The
 * drivers print it with {@link ControlStore.schemaSql}, for teams that create tables
 * themselves.
 *
 * @module
 */
import { BrokerError, type BrokerErrorOptions } from "./errors.js";
import type { TableDefinition } from "./table.js";

/** The name of the control table every driver keeps pauses and rate counters in. */
export const CONTROL_TABLE = "rowclaim_controls";

/** What `broker.pause(table, options)` and `broker.resume(table, options)` take. */
export interface PauseOptions {
  /**
   * Pause (or resume) only this group of the table: subscriptions claiming from other groups go
   * on. Needs a group column. Default: the whole table (every subscription of it, whatever its
   * group). A group paused on its own stays paused when the whole table is resumed.
   */
  readonly group?: string;
}

/**
 * The `rateLimit` option of `subscribe()`: at most `limit` rows claimed per `intervalMs`, counted
 * in the database across every process and subscription that claims in the same scope (so give
 * them all the same limit). Windows are aligned to the epoch on the hosts' clocks (`floor(now /
 * intervalMs)`), so processes whose clocks differ by `d` ms may share a window's edge for `d` ms.
 *
 * Cost: one statement (an upsert of the scope's counter row in `rowclaim_controls`) before
 * each claim, and one more after a claim that took fewer rows than it reserved (giving the rest
 * back), on a connection of the pool taken only for that statement. A claim never takes more
 * than what is left of the window; with nothing left, the subscription waits for the next
 * window (or its poll interval, whichever comes first).
 */
export interface RateLimitOptions {
  /** The most rows claimed per window, a whole number of at least 1. */
  readonly limit: number;
  /** The window's length in milliseconds, a whole number of at least 1. */
  readonly intervalMs: number;
  /**
   * What one counter covers: `"table"` (default), every subscription of the table whatever its
   * group; `"group"`, each group (the subscription's own `group`) on its own. A limit per
   * advisory key is not offered (refused with `DECLARATION`): a claim would have to count every
   * key it takes; use a group per key instead.
   */
  readonly per?: "table" | "group";
}

/** One rate counter as {@link ControlState} shows it. */
export interface RateState {
  /** What the counter covers: the whole table, or one group (`null`: rows without a group). */
  readonly per: "table" | "group";
  /** The group counted, when `per` is `"group"`; `undefined` for the table's counter. */
  readonly group?: string | null;
  /** The limit the last claim in this scope was given. */
  readonly limit: number;
  /** The window's length the last claim in this scope was given, in milliseconds. */
  readonly intervalMs: number;
  /** Rows claimed so far in the current window (0 once the last counted window has passed). */
  readonly used: number;
  /**
   * How long, in milliseconds, a claim in this scope must wait for the next window: `0` while
   * the current window has room.
   */
  readonly waitMs: number;
}

/** What `broker.controlState(table)` reads: the table's pauses and rate counters, from the database. */
export interface ControlState {
  /** The table's name as described. */
  readonly table: string;
  /** Whether the whole table is paused (no subscription of it claims). */
  readonly paused: boolean;
  /** The groups paused on their own, in name order. */
  readonly pausedGroups: readonly string[];
  /** The rate counters rate-limited subscriptions of the table keep. */
  readonly rates: readonly RateState[];
}

/**
 * The driver offers no run-time controls (`capabilities.controls` is false): `pause`, `resume`,
 * `controlState` and the `rateLimit` option are refused before anything is written.
 */
export class UnsupportedControlError extends BrokerError {
  declare readonly code: "UNSUPPORTED_CONTROL";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("UNSUPPORTED_CONTROL", message, options);
    this.name = "UnsupportedControlError";
  }
}

/**
 * The key a table's rows of the control table carry: its schema (where named) and name, as
 * described (`"jobs"`, `"app.jobs"`).
 */
export function controlTableKey(table: TableDefinition): string {
  return table.schema === undefined ? table.name : `${table.schema}.${table.name}`;
}

/** The scope of a control row: the whole table, one named group, or the rows without a group. */
export type ControlScope =
  | { readonly kind: "table" }
  | { readonly kind: "group"; readonly group: string | null };

/** The whole-table scope. */
export const TABLE_SCOPE: ControlScope = Object.freeze({ kind: "table" });

/**
 * A scope as the control table's `scope` column writes it: `*` for the table, `group:<name>` for
 * a group, `nogroup` for the rows without a group.
 */
export function scopeText(scope: ControlScope): string {
  if (scope.kind === "table") return "*";
  return scope.group === null ? "nogroup" : `group:${scope.group}`;
}

/** The scope a `scope` column's text names (the reverse of {@link scopeText}); `undefined` for text it does not know. */
export function parseScope(text: string): ControlScope | undefined {
  if (text === "*") return TABLE_SCOPE;
  if (text === "nogroup") return { kind: "group", group: null };
  if (text.startsWith("group:")) return { kind: "group", group: text.slice("group:".length) };
  return undefined;
}
