/**
 * The small structural view of a better-sqlite3 `Database` the driver is typed through, so that
 * any object of that shape (better-sqlite3 12's, or a compatible one) can be handed in.
 *
 * @module
 */

/** What `run()` reports. */
export interface SqliteRunResult {
  /** How many rows the statement changed. */
  readonly changes: number;
}

/** A prepared statement, as better-sqlite3's `Statement` offers it. */
export interface SqliteStatement {
  /** Runs the statement and reports how many rows it changed. */
  run(...parameters: unknown[]): SqliteRunResult;
  /** Runs the statement and returns every row it produced. */
  all(...parameters: unknown[]): unknown[];
  /** Runs the statement and returns its first row, or `undefined`. */
  get(...parameters: unknown[]): unknown;
}

/** A database connection, as better-sqlite3's `Database` offers it. */
export interface SqliteDatabase {
  /** The file name the database was opened with (`":memory:"` or `""` for a private database). */
  readonly name: string;
  /** Whether the database lives in memory (or in a temporary file) rather than in a named file. */
  readonly memory: boolean;
  /** Whether the connection is open. */
  readonly open: boolean;
  /** Whether a transaction is open on the connection. */
  readonly inTransaction: boolean;
  /** Prepares one statement. */
  prepare(source: string): SqliteStatement;
  /** Runs one or more statements without parameters. */
  exec(source: string): unknown;
  /** Runs a PRAGMA. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  /** Closes the connection. */
  close(): unknown;
}
