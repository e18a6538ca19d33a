/**
 * Bounded connection waits: every connection the driver takes from the pool waits at most
 * `acquireTimeoutMs` (core's `acquireWithin`), then fails with `CONNECTION_TIMEOUT`.
 *
 * @module
 */
import { acquireWithin } from "@rowclaim/core/driver";
import { HeldConnection } from "./connection.js";
import type { PoolClientLike, PoolLike, QueryConfigLike, QueryResultLike } from "./pool-like.js";

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
    const connection = await HeldConnection.acquire(this);
    try {
      return await connection.query(config);
    } finally {
      connection.release();
    }
  }

  /** Ends the pool underneath. */
  end(): Promise<void> {
    return this.#raw.end();
  }
}
