/**
 * The small structural interfaces the driver types mysql2 through, so that it takes a
 * `mysql2/promise` pool or connection the user owns without depending on mysql2's own types.
 *
 * @module
 */

/** One statement and its parameters, as mysql2's `query({ sql, values, rowsAsArray })` takes it. */
export interface QueryOptionsLike {
  readonly sql: string;
  readonly values?: unknown[];
  /** Rows come back as arrays in select order, so that no column name can clash with another. */
  readonly rowsAsArray?: boolean;
}

/**
 * Something that runs statements: a `mysql2/promise` pool or connection. The options form is used
 * where rows come back as arrays, the text form otherwise (mysql2 copies an options object for
 * every statement).
 */
export interface QueryableLike {
  query(options: QueryOptionsLike): Promise<[unknown, unknown]>;
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>;
}

/** A connection checked out of a pool (`mysql2/promise` `PoolConnection`). */
export interface ConnectionLike extends QueryableLike {
  /** The server's id of the session (what `KILL CONNECTION` names). */
  readonly threadId: number | null;
  /** Returns the connection to its pool. */
  release(): void;
  /** Closes the connection at once and drops it from its pool. */
  destroy(): void;
}

/** A pool of connections (`mysql2/promise` `Pool`). */
export interface PoolLike extends QueryableLike {
  getConnection(): Promise<ConnectionLike>;
  end(): Promise<void>;
}

/** The header mysql2 returns for INSERT, UPDATE and DELETE. */
export interface ResultHeaderLike {
  readonly affectedRows: number;
  readonly insertId: number | string;
  readonly info?: string;
}

/** Runs a select and returns its rows as arrays, in select order. */
export async function selectRows(
  client: QueryableLike,
  sql: string,
  values: unknown[],
): Promise<unknown[][]> {
  const [rows] = await client.query({ sql, values, rowsAsArray: true });
  return rows as unknown[][];
}

/** Runs a statement that returns no rows and returns its header. */
export async function run(
  client: QueryableLike,
  sql: string,
  values: unknown[] = [],
): Promise<ResultHeaderLike> {
  const [header] = await client.query(sql, values);
  return header as ResultHeaderLike;
}

/**
 * The rows an UPDATE matched, whatever the connection's `FOUND_ROWS` flag (without it, a row
 * already holding the value counts 0 affected rows): read from the info text, "Rows matched: 1".
 */
export function matchedRows(header: ResultHeaderLike): number {
  const match = /Rows matched:\s*(\d+)/i.exec(header.info ?? "");
  return match?.[1] === undefined ? header.affectedRows : Number(match[1]);
}

/** Returns a connection to its pool, or closes it when `broken` (it may hold a lock or a transaction). */
export function letGo(connection: ConnectionLike, broken: boolean): void {
  try {
    if (broken) connection.destroy();
    else connection.release();
  } catch {
    // The connection is already gone.
  }
}
