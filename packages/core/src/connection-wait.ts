/**
 * The bounded wait for a pooled connection that every driver uses, so that a pool too small for
 * its work ends in the same clear `CONNECTION_TIMEOUT` on every database instead of a hang.
 *
 * @module
 */
import { ConnectionTimeoutError } from "./errors.js";

const timedOutMark: unique symbol = Symbol("timed out");

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
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<typeof timedOutMark>((resolve) => {
    timer = setTimeout(() => resolve(timedOutMark), wait.waitMs);
  });
  try {
    const won = await Promise.race([pending, timedOut]);
    if (won !== timedOutMark) return won as C;
  } finally {
    clearTimeout(timer);
  }
  pending.then(giveBack, () => undefined);
  throw new ConnectionTimeoutError(
    `${wait.driver}: no connection came from the pool within ${wait.waitMs} ms${wait.poolSize === undefined ? "" : ` (${wait.poolSize})`}. Every connection is held: by deliveries in work (row lock and advisory lock deliveries each hold one), by your own code, or the server does not answer. ${wait.enlarge}, run fewer workers, or raise acquireTimeoutMs.`,
    { waitedMs: wait.waitMs },
  );
}
