/**
 * The structural interfaces through which the driver uses `pg` (a `pg.Pool` and its `PoolClient`
 * satisfy them; so does any pool that behaves the same way).
 *
 * @module
 */

/**
 * A query as the driver sends it: text, values (what `pg` takes, or an `ArrayParam`, which another
 * client sends as the literal its `toPostgres` renders) and, for prepared statements, a name.
 */
export interface QueryConfigLike {
  readonly text: string;
  readonly values?: unknown[];
  readonly name?: string;
}

/** What a query returns: its rows by column name, and how many rows it touched. */
export interface QueryResultLike {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number | null;
}

/** Anything that runs a query: a pool, a client, a transaction's client. */
export interface QueryableLike {
  query(config: QueryConfigLike): Promise<QueryResultLike>;
}

/** A LISTEN notification as `pg` delivers it. */
export interface NotificationLike {
  readonly channel: string;
  readonly payload?: string | undefined;
}

/** A client checked out of a pool (`pg.PoolClient`). */
export interface PoolClientLike extends QueryableLike {
  /** Returns the client to its pool; with an error (or `true`) the pool destroys it instead. */
  release(destroy?: Error | boolean): void;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "notification", listener: (message: NotificationLike) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  removeListener(event: "error", listener: (error: Error) => void): unknown;
  removeListener(event: "notification", listener: (message: NotificationLike) => void): unknown;
  removeListener(event: "end", listener: () => void): unknown;
}

/** A connection pool (`pg.Pool`). */
export interface PoolLike extends QueryableLike {
  /** Checks a client out; the caller releases it. */
  connect(): Promise<PoolClientLike>;
  /** Closes every connection. Only called on a pool the driver created. */
  end(): Promise<void>;
}
