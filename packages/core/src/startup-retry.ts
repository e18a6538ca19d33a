/**
 * The bounded start-up retry of `subscribe`: a container often starts before its database
 * answers (compose, Kubernetes), so a subscription whose start-up fails because the connection
 * was lost or refused (`CONNECTION_LOST`) tries again, with backoff, until it works or its time
 * is up. Every other failure (a missing table, a server too old, a probe that failed) is
 * permanent and fails at once.
 *
 * @module
 */
import { BrokerError, ClosedError, InvalidArgumentError } from "./errors.js";
import type { BrokerLogger } from "./logger.js";
import { describeValue, type KeySet, unknownKey } from "./option-keys.js";

/** How long `subscribe` keeps retrying a start-up that lost its connection unless told, in milliseconds. */
export const DEFAULT_STARTUP_RETRY_MS = 30_000;

/** The first pause between start-up attempts, in milliseconds; it doubles up to {@link STARTUP_RETRY_MAX_PAUSE_MS}. */
export const STARTUP_RETRY_FIRST_PAUSE_MS = 250;

/** The longest pause between start-up attempts, in milliseconds. */
export const STARTUP_RETRY_MAX_PAUSE_MS = 4000;

/** The start-up retry of `createBroker({ startupRetry })`. */
export interface StartupRetryOptions {
  /**
   * How long a subscription's start-up keeps retrying after `CONNECTION_LOST` (the database not
   * up yet, restarting, a session killed), in milliseconds, counted from the first attempt.
   * Default 30,000. `0` fails at once, as `startupRetry: false` does.
   */
  readonly timeout?: number;
}

/** The keys of `createBroker()`'s `startupRetry`. */
export const startupRetryOptionKeys = Object.freeze(
  Object.keys({ timeout: true } satisfies KeySet<StartupRetryOptions>),
);

/**
 * Reads `createBroker`'s `startupRetry` option: the retry's time in milliseconds (0: fail fast).
 *
 * @throws {InvalidArgumentError} an unknown key or a value of the wrong type.
 */
export function startupRetryTime(option: StartupRetryOptions | false | undefined): number {
  if (option === undefined) return DEFAULT_STARTUP_RETRY_MS;
  if (option === false) return 0;
  if (typeof option !== "object" || option === null) {
    throw new InvalidArgumentError(
      `createBroker(): startupRetry must be { timeout } or false, got ${describeValue(option)}.`,
    );
  }
  const unknown = unknownKey(option, startupRetryOptionKeys);
  if (unknown !== undefined) {
    throw new InvalidArgumentError(
      `createBroker(): unknown option \`startupRetry.${unknown.key}\`. ${unknown.advice}`,
    );
  }
  const timeout = option.timeout ?? DEFAULT_STARTUP_RETRY_MS;
  if (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout < 0) {
    throw new InvalidArgumentError(
      `createBroker(): startupRetry.timeout must be a number of milliseconds of at least 0, got ${describeValue(timeout)}. Set it to 0 (or startupRetry: false) to fail at once.`,
    );
  }
  return timeout;
}

/** What {@link retryStartup} needs beside the attempt. */
export interface StartupRetry {
  /** How long to keep retrying, in milliseconds (0: one attempt). */
  readonly timeoutMs: number;
  /** Aborted when the broker closes: the retry stops with a `ClosedError`. */
  readonly signal: AbortSignal;
  readonly logger: BrokerLogger;
  /** The table the start-up is for, named in the log and the errors. */
  readonly table: string;
}

/**
 * Runs `attempt` until it resolves, retrying after `CONNECTION_LOST` with backoff (250 ms
 * doubling up to 4 s) while `retry.timeoutMs` lasts; the first failed attempt is logged once, as
 * a warning. Past the time, the last `CONNECTION_LOST` is thrown; any other error at once.
 *
 * @throws {ClosedError} the broker closed while the start-up was failing or waiting to retry.
 */
export async function retryStartup<T>(attempt: () => Promise<T>, retry: StartupRetry): Promise<T> {
  const deadline = Date.now() + retry.timeoutMs;
  let pauseMs = STARTUP_RETRY_FIRST_PAUSE_MS;
  for (let attempts = 1; ; attempts += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (retry.signal.aborted) throw closedWhileStarting(retry.table, error);
      const left = deadline - Date.now();
      if (!BrokerError.is(error, "CONNECTION_LOST") || left <= 0) throw error;
      if (attempts === 1) {
        retry.logger.warn(
          `Table "${retry.table}": subscribe's start-up lost its connection to the database (not up yet, restarting, or the session was ended); retrying for up to ${Math.ceil(left / 1000)} s (createBroker({ startupRetry }) sets how long, false fails at once).`,
          { err: error, table: retry.table },
        );
      }
      await pause(Math.min(pauseMs, left), retry.signal);
      pauseMs = Math.min(pauseMs * 2, STARTUP_RETRY_MAX_PAUSE_MS);
      if (retry.signal.aborted) throw closedWhileStarting(retry.table, error);
    }
  }
}

/** The broker closed under a start-up: whatever the attempt failed with, nothing was subscribed. */
function closedWhileStarting(table: string, cause: unknown): ClosedError {
  return new ClosedError(
    `The broker closed while table "${table}"'s subscription was starting (retrying after a lost connection); nothing was subscribed.`,
    { table, cause },
  );
}

/** Waits `ms`, or less when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
