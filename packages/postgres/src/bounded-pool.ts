/**
 * Bounded connection waits, and the pool-size check. Every connection the driver takes from
 * the pool (a claim, a delivery's held session, a publish, a one-off statement) waits at most
 * `acquireTimeoutMs`; past it the wait ends in a `ConnectionTimeoutError` naming the pool's size
 * and the fix, never in a hang. A connection that arrives after its wait gave up goes straight
 * back to the pool.
 *
 * @module
 */
import { acquireWithin } from "@rowclaim/core/driver";
import { isConnectionLost } from "./normalize-error.js";
import type { PoolClientLike, PoolLike, QueryConfigLike, QueryResultLike } from "./pool-like.js";

/** How long the driver waits for a connection from the pool unless told (core's default), in milliseconds. */
export { DEFAULT_ACQUIRE_TIMEOUT_MS } from "@rowclaim/core/driver";

/** The size of a `pg.Pool` (its `options.max`), when the pool shows it. */
export function poolMax(pool: PoolLike): number | undefined {
  const max = (pool as { options?: { max?: unknown } }).options?.max;
  return typeof max === "number" && Number.isInteger(max) && max > 0 ? max : undefined;
}

/** Whether a `pg.Pool` shows an idle client and no caller waiting for one. */
function hasIdleClient(pool: PoolLike): boolean {
  const { idleCount, waitingCount } = pool as { idleCount?: unknown; waitingCount?: unknown };
  return typeof idleCount === "number" && idleCount > 0 && waitingCount === 0;
}

/** A pool whose every connection wait is bounded. */
export class BoundedPool implements PoolLike {
  readonly #raw: PoolLike;
  readonly #waitMs: number;

  constructor(raw: PoolLike, waitMs: number) {
    this.#raw = raw;
    this.#waitMs = waitMs;
  }

  /** Checks a client out, waiting at most the bound. */
  connect(): Promise<PoolClientLike> {
    // An idle client and nobody waiting before us: `pg` hands it over at once, no timer needed.
    if (hasIdleClient(this.#raw)) return this.#raw.connect();
    const max = poolMax(this.#raw);
    return acquireWithin(
      this.#raw.connect(),
      {
        waitMs: this.#waitMs,
        driver: "rowclaim/postgres",
        poolSize: max === undefined ? undefined : `the pool holds at most ${max}`,
        enlarge: "Make the pool larger",
      },
      (late) => late.release(),
    );
  }

  /** Runs one query on a client checked out within the bound, then returns the client. */
  async query(config: QueryConfigLike): Promise<QueryResultLike> {
    const client = await this.connect();
    let broken: Error | undefined;
    const onError = (error: Error): void => {
      broken ??= error;
    };
    client.on("error", onError);
    try {
      return await client.query(config);
    } catch (error) {
      if (isConnectionLost(error)) broken ??= error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      if (broken === undefined) {
        client.removeListener("error", onError);
        client.release();
      } else {
        // Keep the listener: a dead client may still emit errors, which must not go unhandled.
        client.release(broken);
      }
    }
  }

  /** Ends the pool underneath. */
  end(): Promise<void> {
    return this.#raw.end();
  }
}
