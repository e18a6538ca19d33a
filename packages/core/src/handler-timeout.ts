/**
 * Handler timeouts: after the subscription's `timeout` the delivery's `signal` aborts with a
 * {@link HandlerTimeoutError}; if the handler has not settled within `timeoutGrace` more, the
 * broker settles the row as a failed attempt and ignores whatever the handler does later. One
 * {@link HandlerDeadline} per delivery.
 *
 * @module
 */
import { HandlerTimeoutError } from "./errors.js";

/** One delivery's handler timeout. */
export interface DeliveryTimeout {
  /** Milliseconds after the handler starts at which its signal aborts. */
  readonly timeoutMs: number;
  /** Milliseconds after the abort at which the broker settles the row itself. */
  readonly graceMs: number;
}

/** A subscription's handler timeout, resolved. */
export interface HandlerTimeoutSettings {
  /** The subscription's `timeout`; `undefined` where only rows with a `timeoutColumn` value time out. */
  readonly timeoutMs: number | undefined;
  /** Milliseconds after the abort at which the broker settles the row itself. */
  readonly graceMs: number;
  /** The extra column holding a row's own timeout (`timeoutColumn`), if any. */
  readonly column?: string;
}

/**
 * The timeout of one delivery of `row` (its raw columns): the row's own value in the timeout
 * column where it holds a whole number from 1 to {@link MAX_TIMEOUT_MS} (as a number or numeric
 * text), else the subscription's. `invalid` reports a value that is set but not such a number.
 */
export function deliveryTimeout(
  settings: HandlerTimeoutSettings,
  row: Readonly<Record<string, unknown>>,
  invalid: (value: unknown) => void,
): DeliveryTimeout | undefined {
  const subscription =
    settings.timeoutMs === undefined
      ? undefined
      : { timeoutMs: settings.timeoutMs, graceMs: settings.graceMs };
  if (settings.column === undefined) return subscription;
  const value = row[settings.column];
  if (value === null || value === undefined) return subscription;
  const ms =
    typeof value === "number" || typeof value === "bigint" ? Number(value) : Number(String(value).trim());
  if (!Number.isInteger(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    invalid(value);
    return subscription;
  }
  return { timeoutMs: ms, graceMs: settings.graceMs };
}

/** The grace after a timeout when `timeoutGrace` is not given, in milliseconds. */
export const DEFAULT_TIMEOUT_GRACE_MS = 5000;

/** The largest timeout (or grace) a subscription takes: what one timer can hold, about 24.8 days. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** The deadline of one delivery: its abort, then its expiry. */
export class HandlerDeadline {
  readonly #controller = new AbortController();
  readonly #expired: Promise<HandlerTimeoutError>;
  #timers: NodeJS.Timeout[] = [];
  #isExpired = false;

  /**
   * Starts the clock (the handler starts now).
   *
   * @param settings the timeout and its grace.
   * @param describe the message of the error, naming the table and the row.
   */
  constructor(settings: DeliveryTimeout, describe: string) {
    const error = new HandlerTimeoutError(describe, { timeoutMs: settings.timeoutMs });
    this.#expired = new Promise((resolve) => {
      this.#timers.push(
        setTimeout(() => {
          this.#controller.abort(error);
          this.#timers.push(
            setTimeout(() => {
              this.#isExpired = true;
              resolve(error);
            }, settings.graceMs),
          );
        }, settings.timeoutMs),
      );
    });
  }

  /** Aborts at the timeout, with the {@link HandlerTimeoutError}. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Whether the grace ran out too. */
  get expired(): boolean {
    return this.#isExpired;
  }

  /** Resolves with the error once the timeout and its grace ran out (never, once cleared). */
  get whenExpired(): Promise<HandlerTimeoutError> {
    return this.#expired;
  }

  /** Stops both timers (the delivery settled). */
  clear(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers = [];
  }
}

/**
 * The signal a delivery sees: the hold's (lost lease, broker closing) and, with a timeout, the
 * deadline's, made on first read.
 */
export function deliverySignal(hold: AbortSignal, deadline: HandlerDeadline | undefined): AbortSignal {
  return deadline === undefined ? hold : AbortSignal.any([hold, deadline.signal]);
}
