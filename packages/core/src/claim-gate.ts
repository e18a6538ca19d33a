/**
 * The claim gate: what a subscription asks before each claim, on a driver with run-time
 * controls (`src/controls.ts`). It answers from what it last read of the control table (read
 * again once per poll interval, and at once when a pause in this process or, where the driver
 * watches, in another one changes it), so a claim pays no statement for pauses; with a rate
 * limit, it counts the claim's rows in the database first (one statement) and caps the claim
 * by what the window has left.
 *
 * @module
 */
import type { ControlStore } from "./control-store.js";
import { type ControlScope, scopeText, TABLE_SCOPE } from "./controls.js";
import type { WakeListener } from "./driver.js";

/** A subscription's resolved rate limit. */
export interface RateLimitSettings {
  readonly limit: number;
  readonly intervalMs: number;
  /** The scope whose counter the subscription takes from. */
  readonly scope: ControlScope;
}

/** What the gate lets one claim do. */
export interface Admission {
  /** How many rows the claim may take (0: it must not claim). */
  readonly granted: number;
  /** Why nothing was granted: the table (or group) is paused, or the rate window is used up. */
  readonly held?: "paused" | "rate";
  /** How long to wait before asking again, in milliseconds, when nothing was granted for the rate. */
  readonly waitMs?: number;
  /** The rate window the rows were counted in, where they were. */
  readonly window?: number;
}

type ControlListener = () => void;
const listeners = new Map<string, Set<ControlListener>>();

/**
 * The key under which a table's gates in this process listen for control changes made in this
 * process (dialect, then the control table key).
 */
export function controlChangeKey(dialect: string, tableKey: string): string {
  return `${dialect}\u0000${tableKey}`;
}

/** Registers `listener` for control changes of `key`; returns the function that removes it. */
export function onControlChange(key: string, listener: ControlListener): () => void {
  let set = listeners.get(key);
  if (set === undefined) {
    set = new Set();
    listeners.set(key, set);
  }
  set.add(listener);
  return () => {
    const current = listeners.get(key);
    if (current === undefined) return;
    current.delete(listener);
    if (current.size === 0) listeners.delete(key);
  };
}

/** Tells the gates of `key` in this process that its controls changed. */
export function controlChanged(key: string): void {
  const set = listeners.get(key);
  if (set === undefined) return;
  for (const listener of [...set]) listener();
}

/** The gate of one subscription. */
export class ClaimGate {
  readonly #store: ControlStore;
  readonly #tableKey: string;
  readonly #pollInterval: number;
  /** The scope texts whose pause holds this subscription: the table's, and its group's. */
  readonly #pauseScopes: ReadonlySet<string>;
  readonly #rate: RateLimitSettings | undefined;
  readonly #rateScope: string | undefined;
  readonly #clock: () => number;
  #paused = false;
  /** When the pause state was last read (`#clock` ms); -Infinity: never, or marked stale. */
  #readAt = Number.NEGATIVE_INFINITY;
  #watch: WakeListener | undefined;
  #removeLocal: (() => void) | undefined;

  constructor(args: {
    store: ControlStore;
    tableKey: string;
    group: string | null;
    pollInterval: number;
    rate: RateLimitSettings | undefined;
    clock?: () => number;
  }) {
    this.#store = args.store;
    this.#tableKey = args.tableKey;
    this.#pollInterval = args.pollInterval;
    const scopes = [scopeText(TABLE_SCOPE)];
    if (args.group !== null) scopes.push(scopeText({ kind: "group", group: args.group }));
    this.#pauseScopes = new Set(scopes);
    this.#rate = args.rate;
    this.#rateScope = args.rate === undefined ? undefined : scopeText(args.rate.scope);
    this.#clock = args.clock ?? Date.now;
  }

  /** Whether the subscription was paused when the gate last read. */
  get paused(): boolean {
    return this.#paused;
  }

  /**
   * Starts hearing changes: `onChange` is called (after the gate marked its state stale) when a
   * pause of this table changes, in this process (`localKey`) or, where the store watches,
   * in another one. A watch that fails is left out: the gate still reads every poll interval.
   */
  async listen(
    localKey: string,
    onChange: () => void,
    onWatchFailed: (error: unknown) => void,
  ): Promise<void> {
    const changed = (): void => {
      this.#readAt = Number.NEGATIVE_INFINITY;
      onChange();
    };
    this.#removeLocal = onControlChange(localKey, changed);
    if (this.#store.watch === undefined) return;
    try {
      this.#watch = await this.#store.watch(this.#tableKey, changed);
    } catch (error) {
      onWatchFailed(error);
    }
  }

  /**
   * How many of `want` rows the next claim may take. Reads the pause state where it is older
   * than the poll interval (or was marked stale); takes from the rate window where there is a
   * limit. Throws what the database throws (the claim then counts as failed).
   */
  async admit(want: number): Promise<Admission> {
    const now = this.#clock();
    // A timer never fires early, but the clock may be coarser than the poll interval's wait.
    if (now - this.#readAt >= this.#pollInterval - 1) {
      const rows = await this.#store.read(this.#tableKey);
      this.#paused = rows.some((row) => row.paused && this.#pauseScopes.has(row.scope));
      this.#readAt = now;
    }
    if (this.#paused) return { granted: 0, held: "paused" };
    const rate = this.#rate;
    if (rate === undefined || this.#rateScope === undefined) return { granted: want };
    const window = Math.floor(now / rate.intervalMs) * rate.intervalMs;
    const granted = await this.#store.takeRate(this.#tableKey, this.#rateScope, {
      window,
      intervalMs: rate.intervalMs,
      limit: rate.limit,
      want,
    });
    if (granted > 0) return { granted, window };
    return {
      granted: 0,
      held: "rate",
      window,
      waitMs: Math.max(1, window + rate.intervalMs - this.#clock()),
    };
  }

  /** Gives back the rows an admission counted that its claim did not take. Never throws: a failure only wastes room. */
  async unused(admission: Admission, taken: number): Promise<void> {
    const left = admission.granted - taken;
    if (left <= 0 || admission.window === undefined || this.#rateScope === undefined) return;
    await this.#store
      .returnRate(this.#tableKey, this.#rateScope, admission.window, left)
      .catch(() => undefined);
  }

  /** Stops hearing changes. */
  async close(): Promise<void> {
    this.#removeLocal?.();
    this.#removeLocal = undefined;
    const watch = this.#watch;
    this.#watch = undefined;
    await watch?.close();
  }
}
