/**
 * A connection checked out of the pool and held across statements: it listens for the
 * connection's errors while held, and one that broke is released with an error (destroyed).
 *
 * @module
 */
import { isConnectionLost } from "./normalize-error.js";
import type {
  PoolClientLike,
  PoolLike,
  QueryableLike,
  QueryConfigLike,
  QueryResultLike,
} from "./pool-like.js";
import { type Statement, type StatementValues, statementValues } from "./sql.js";

/** A statement and the values to run it with. */
export interface StatementRun {
  readonly stmt: Statement;
  readonly values: Record<string, unknown>;
}

/** Runs a prepared (named) statement with named values on a pool or client. */
export function execute(
  queryable: QueryableLike,
  stmt: Statement,
  values: StatementValues,
): Promise<QueryResultLike> {
  return queryable.query({ name: stmt.name, text: stmt.text, values: statementValues(stmt, values) });
}

/** A client held by the driver until it calls {@link HeldConnection.release}. */
export class HeldConnection implements QueryableLike {
  readonly client: PoolClientLike;
  #broken: Error | undefined;
  #released = false;
  readonly #onError = (error: Error): void => {
    this.#broken ??= error;
  };

  private constructor(client: PoolClientLike) {
    this.client = client;
    client.on("error", this.#onError);
  }

  /** Checks a client out of `pool` and holds it. */
  static async acquire(pool: PoolLike): Promise<HeldConnection> {
    return new HeldConnection(await pool.connect());
  }

  /** Why the connection broke, if it did. */
  get broken(): Error | undefined {
    return this.#broken;
  }

  /** Whether the client pipelines (`pg`'s `pipeline: true`): statements issued together cost one round trip. */
  get pipelined(): boolean {
    return (this.client as { readonly pipeline?: unknown }).pipeline === true;
  }

  /** Whether the connection was released. */
  get released(): boolean {
    return this.#released;
  }

  /** Runs a query on the held client; an error that means the connection is gone marks it broken. */
  async query(config: QueryConfigLike): Promise<QueryResultLike> {
    try {
      return await this.client.query(config);
    } catch (error) {
      if (isConnectionLost(error)) this.markBroken(error);
      throw error;
    }
  }

  /** Runs a named statement with named values. */
  run(stmt: Statement, values: StatementValues): Promise<QueryResultLike> {
    return execute(this, stmt, values);
  }

  /**
   * Issues the statements `send` starts in one write where the client pipelines (its socket
   * corked while `send` runs); elsewhere `send` just runs.
   */
  together<T>(send: () => T): T {
    type Corked = { readonly connection?: { readonly stream?: { cork?: () => void; uncork?: () => void } } };
    const stream = this.pipelined ? (this.client as Corked).connection?.stream : undefined;
    if (typeof stream?.cork !== "function" || typeof stream.uncork !== "function") return send();
    stream.cork();
    try {
      return send();
    } finally {
      stream.uncork();
    }
  }

  /** Runs a plain statement without parameters (`BEGIN`, `COMMIT`, …). */
  text(sql: string): Promise<QueryResultLike> {
    return this.query({ text: sql });
  }

  /** Marks the connection as not to be reused (the pool will destroy it on release). */
  markBroken(reason: unknown): void {
    this.#broken ??= reason instanceof Error ? reason : new Error(String(reason));
  }

  /**
   * Hands the client, still checked out, to a new holder (a row lock batch's connection going on
   * to the next claim): this one counts as released from now on, and the new one releases it.
   */
  passOn(): HeldConnection {
    if (this.#released) throw new Error("rowclaim/postgres: a released connection cannot be passed on.");
    this.#released = true;
    this.client.removeListener("error", this.#onError);
    const next = new HeldConnection(this.client);
    if (this.#broken !== undefined) next.markBroken(this.#broken);
    return next;
  }

  /** Returns the client to the pool, or has the pool destroy it when it broke. Idempotent. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const broken = this.#broken;
    if (broken === undefined) {
      this.client.removeListener("error", this.#onError);
      this.client.release();
    } else {
      // Keep a listener: a dead client may still emit errors, which must not go unhandled.
      this.client.release(broken);
    }
  }
}
