/**
 * The bounded wait for a pooled connection that every driver uses, so that a pool too small for
 * its work ends in the same clear `CONNECTION_TIMEOUT` on every database instead of a hang.
 *
 * @module
 */
import { ConnectionTimeoutError, InvalidArgumentError } from "./errors.js";

const timedOutMark: unique symbol = Symbol("timed out");

/** How long a driver waits for a connection from its pool unless told (`acquireTimeoutMs`), in milliseconds. */
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 30_000;

/**
 * The connection wait a driver factory was given as `acquireTimeoutMs`, or the default when it
 * was not: a finite number of at least 1 ms. A wait of 0 would fail every checkout that is not
 * answered at once.
 *
 * @param factory the factory as the message names it, for example `"createMysqlDriver()"`.
 * @throws {InvalidArgumentError} the value is not a finite number of at least 1.
 */
export function acquireTimeoutOf(factory: string, value: unknown): number {
  const waitMs = value ?? DEFAULT_ACQUIRE_TIMEOUT_MS;
  if (typeof waitMs !== "number" || !Number.isFinite(waitMs) || waitMs < 1) {
    throw new InvalidArgumentError(
      `${factory}: acquireTimeoutMs must be a number of milliseconds of at least 1, got ${String(waitMs)}.`,
    );
  }
  return waitMs;
}

/** How a driver's connection wait is bounded and what its timeout error says. */
export interface ConnectionWait {
  /** How long to wait, in milliseconds. */
  readonly waitMs: number;
  /** The driver as the message names it, for example `"rowclaim/postgres"`. */
  readonly driver: string;
  /** The pool's size as the message says it (`"the pool holds at most 10"`), when the pool shows it. */
  readonly poolSize?: string | undefined;
  /** The first fix the message names, for example `"Make the pool larger"`. */
  readonly enlarge: string;
}

/**
 * Waits for `pending` (a connection being checked out) at most `wait.waitMs`. A connection that
 * comes later is handed to `giveBack` (it goes back to its pool at once); the wait itself fails
 * with a {@link ConnectionTimeoutError} naming the pool's size and the fixes. A rejection of
 * `pending` within the bound is passed on as it is, for the driver to normalise.
 *
 * @example
 * const client = await acquireWithin(pool.connect(), wait, (late) => late.release());
 */
export async function acquireWithin<C>(
  pending: Promise<C>,
  wait: ConnectionWait,
  giveBack: (late: C) => void,
): Promise<C> {
  const won = await raceWait(pending, wait.waitMs, giveBack);
  if (won !== timedOutMark) return won;
  throw new ConnectionTimeoutError(
    `${wait.driver}: no connection came from the pool within ${wait.waitMs} ms${wait.poolSize === undefined ? "" : ` (${wait.poolSize})`}. Every connection is held: by deliveries in work (row lock and advisory lock deliveries each hold one), by your own code, or the server does not answer. ${wait.enlarge}, run fewer workers, or raise acquireTimeoutMs.`,
    { waitedMs: wait.waitMs },
  );
}

/**
 * Waits for `pending` (a connection being checked out) at most `waitMs`, for a caller that does
 * without a connection that does not come at once (a claim that already took rows stops taking):
 * `undefined` when it did not come in time, and a connection that comes later is handed to
 * `giveBack`. A rejection of `pending` within the bound is passed on as it is.
 */
export async function connectionWithin<C>(
  pending: Promise<C>,
  waitMs: number,
  giveBack: (late: C) => void,
): Promise<C | undefined> {
  const won = await raceWait(pending, waitMs, giveBack);
  return won === timedOutMark ? undefined : won;
}

/** `pending`'s value if it comes within `waitMs`, else the mark (and `giveBack` gets it when it comes). */
async function raceWait<C>(
  pending: Promise<C>,
  waitMs: number,
  giveBack: (late: C) => void,
): Promise<C | typeof timedOutMark> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<typeof timedOutMark>((resolve) => {
    timer = setTimeout(() => resolve(timedOutMark), waitMs);
  });
  try {
    const won = await Promise.race([pending, timedOut]);
    if (won !== timedOutMark) return won;
  } finally {
    clearTimeout(timer);
  }
  pending.then(giveBack, () => undefined);
  return timedOutMark;
}
