/**
 * Bounded connection waits: mysql2's pool waits for a free connection for ever, so every
 * connection the driver takes goes through {@link BoundedPool} (core's `acquireWithin`). A
 * connection the server refuses fails with `ConnectionLostError`.
 *
 * @module
 */
import { ConnectionLostError } from "@rowclaim/core";
import { acquireWithin } from "@rowclaim/core/driver";
import { classifyError } from "./normalize-error.js";
import { type ConnectionLike, letGo, type PoolLike, type QueryOptionsLike } from "./pool-like.js";

/** The `connectionLimit` of a mysql2 pool (promise or callback), when the pool shows it. */
export function poolConnectionLimit(pool: PoolLike): number | undefined {
  const shaped = pool as {
    config?: { connectionLimit?: unknown };
    pool?: { config?: { connectionLimit?: unknown } };
  };
  const limit = shaped.pool?.config?.connectionLimit ?? shaped.config?.connectionLimit;
  return typeof limit === "number" && Number.isInteger(limit) && limit > 0 ? limit : undefined;
}

/** A pool whose every connection wait is bounded. */
export class BoundedPool implements PoolLike {
  readonly #raw: PoolLike;
  readonly #waitMs: number;

  constructor(raw: PoolLike, waitMs: number) {
    this.#raw = raw;
    this.#waitMs = waitMs;
  }

  /** Checks a connection out, waiting at most the bound. */
  async getConnection(): Promise<ConnectionLike> {
    const limit = poolConnectionLimit(this.#raw);
    try {
      return await acquireWithin(
        this.#raw.getConnection(),
        {
          waitMs: this.#waitMs,
          driver: "rowclaim/mysql",
          poolSize: limit === undefined ? undefined : `its connectionLimit is ${limit}`,
          enlarge: "Raise connectionLimit",
        },
        (late) => late.release(),
      );
    } catch (error) {
      if (classifyError(error).connectionLost) {
        throw new ConnectionLostError(
          `rowclaim/mysql: connecting to the server failed (${error instanceof Error ? error.message : String(error)}). Check that the server is up and the URL is right, then retry.`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  /** Runs one statement on a connection checked out within the bound, then returns it. */
  query(options: QueryOptionsLike): Promise<[unknown, unknown]>;
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
  async query(statement: QueryOptionsLike | string, values?: unknown[]): Promise<[unknown, unknown]> {
    const connection = await this.getConnection();
    let broken = false;
    try {
      return await (typeof statement === "string"
        ? connection.query(statement, values)
        : connection.query(statement));
    } catch (error) {
      broken = classifyError(error).connectionLost;
      throw error;
    } finally {
      letGo(connection, broken);
    }
  }

  /** Ends the pool underneath. */
  end(): Promise<void> {
    return this.#raw.end();
  }
}
