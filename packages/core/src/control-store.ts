/**
 * The driver side of run-time controls (`src/controls.ts`): one optional capability, a
 * {@link ControlStore} a driver exposes as `driver.controls` and declares with
 * `capabilities.controls: true`. Core decides everything else (what is paused for which
 * subscription, how much of a window a claim may take, when to read again); the store only reads
 * and writes the control table, `rowclaim_controls`, in its dialect.
 *
 * @module
 */
import type { WakeListener } from "./wake-listener.js";

/** One row of the control table, as {@link ControlStore.read} returns it. */
export interface ControlRow {
  /** The row's scope text (`*`, `group:<name>`, `nogroup`; see `scopeText`). */
  readonly scope: string;
  /** Whether the scope is paused. */
  readonly paused: boolean;
  /** The start of the rate window last counted (ms since the epoch), or `null` where none was. */
  readonly rateWindow: number | null;
  /** Rows counted in that window. */
  readonly rateCount: number;
  /** The limit the last rate take was given, or `null`. */
  readonly rateLimit: number | null;
  /** The window length the last rate take was given, in milliseconds, or `null`. */
  readonly rateIntervalMs: number | null;
}

/** What {@link ControlStore.takeRate} is asked for. */
export interface RateTake {
  /** The window's start, in milliseconds since the epoch (a multiple of `intervalMs`, from the host's clock). */
  readonly window: number;
  /** The window's length in milliseconds (stored for reads). */
  readonly intervalMs: number;
  /** The most rows the scope may count in one window. */
  readonly limit: number;
  /** How many rows the claim would take. */
  readonly want: number;
}

/**
 * A driver's control table. Every method takes the table's key (`controlTableKey`) and a scope
 * text; values always travel as parameters.
 */
export interface ControlStore {
  /**
   * Sets whether one scope is paused, creating the control table (and the scope's row) where
   * absent, and tells listening processes at once where the driver can (see
   * {@link ControlStore.watch}).
   */
  setPaused(table: string, scope: string, paused: boolean): Promise<void>;
  /** Every control row of `table`; none while the control table does not exist. */
  read(table: string): Promise<readonly ControlRow[]>;
  /**
   * Atomically counts up to `take.want` rows in the scope's window `take.window` and returns how
   * many it counted: `take.want` while the window has room, what is left of `take.limit`
   * otherwise (0 when nothing is). A row whose stored window is older starts the new window; one
   * whose stored window is newer (a host whose clock is behind) counts nothing. Creates the
   * scope's row where absent. Never counts past `take.limit` however many processes take at
   * once.
   */
  takeRate(table: string, scope: string, take: RateTake): Promise<number>;
  /** Gives back `count` rows of window `window` (a claim took fewer rows than it was given); no-op once the window moved on. */
  returnRate(table: string, scope: string, window: number, count: number): Promise<void>;
  /**
   * Creates the control table where absent (`CREATE TABLE IF NOT EXISTS`): a rate-limited
   * subscription calls it at subscribe.
   */
  ensure(): Promise<void>;
  /**
   * Calls `onChange` when another process changes a control row of `table` (PostgreSQL with
   * `notify: true, watchControls: true`: a NOTIFY on a channel of the table's, heard on one connection per
   * table, shared by the driver's subscriptions). Optional: without it, subscriptions read again
   * every poll interval.
   */
  watch?(table: string, onChange: () => void): Promise<WakeListener>;
  /** The control table's `CREATE TABLE` statement, as SQL text. */
  schemaSql(): string;
}

/**
 * A control row from a row of a store's read statement (columns `scope`, `paused` — a boolean,
 * or 1 and 0 —, `rate_window`, `rate_count`, `rate_limit`, `rate_interval_ms`, numbers as the
 * client returned them).
 */
export function controlRowOf(row: Readonly<Record<string, unknown>>): ControlRow {
  return {
    scope: String(row.scope),
    paused: Number(row.paused) === 1,
    rateWindow: nullableNumber(row.rate_window),
    rateCount: Number(row.rate_count ?? 0),
    rateLimit: nullableNumber(row.rate_limit),
    rateIntervalMs: nullableNumber(row.rate_interval_ms),
  };
}

function nullableNumber(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
