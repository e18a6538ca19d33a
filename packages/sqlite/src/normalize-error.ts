/**
 * Maps better-sqlite3's native errors (`SqliteError` with an `SQLITE_*` code, and the
 * `TypeError` it throws on a closed connection) onto rowclaim's error codes.
 *
 * @module
 */
import {
  BrokerError,
  type BrokerErrorCode,
  ClosedError,
  ConnectionTimeoutError,
  ConstraintError,
  InvalidArgumentError,
  SchemaError,
} from "@rowclaim/core";
import type { ErrorContext } from "@rowclaim/core/driver";

/** The native error's `SQLITE_*` code (extended codes included), or `undefined`. */
export function sqliteCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}

/**
 * Whether the error is transient lock contention (`SQLITE_BUSY*`, `SQLITE_LOCKED*`): another
 * connection holds the lock the statement needs. The driver retries these.
 */
export function isBusyError(error: unknown): boolean {
  const code = sqliteCode(error);
  return code !== undefined && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/**
 * The core code a native error maps to, or `undefined` where rowclaim has no code for it (the
 * native error is then passed on as it is).
 *
 * | native | core code |
 * | --- | --- |
 * | `SQLITE_ERROR` "no such table / column", "has no column named" | `SCHEMA` |
 * | `SQLITE_CONSTRAINT*` (unique, foreign key, not null, check) | `CONSTRAINT` |
 * | `SQLITE_MISMATCH`, `SQLITE_TOOBIG`, `SQLITE_RANGE` | `INVALID_ARGUMENT` |
 * | `SQLITE_BUSY*`, `SQLITE_LOCKED*` that outlived the bounded busy retry | `CONNECTION_TIMEOUT` |
 * | `TypeError` "The database connection is not open" | `CLOSED` |
 */
export function codeForError(error: unknown): BrokerErrorCode | undefined {
  if (BrokerError.is(error)) return undefined;
  const code = sqliteCode(error);
  const message = error instanceof Error ? error.message : "";
  if (code === undefined) {
    return error instanceof TypeError && /connection is not open/i.test(message) ? "CLOSED" : undefined;
  }
  if (code === "SQLITE_ERROR") {
    return /no such (table|column)|has no column named/i.test(message) ? "SCHEMA" : undefined;
  }
  if (code.startsWith("SQLITE_CONSTRAINT")) return "CONSTRAINT";
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "CONNECTION_TIMEOUT";
  if (code === "SQLITE_MISMATCH" || code === "SQLITE_TOOBIG" || code === "SQLITE_RANGE") {
    return "INVALID_ARGUMENT";
  }
  return undefined;
}

/**
 * Turns a native error into the rowclaim error it stands for, with the native error as
 * `cause`; returns the error unchanged where there is no mapping (or it already is a rowclaim
 * error).
 */
export function normalizeError(error: unknown, context: ErrorContext): unknown {
  const code = codeForError(error);
  if (code === undefined) return error;
  const native = error instanceof Error ? error.message : String(error);
  const options = { cause: error, table: context.table };
  const where = `Table "${context.table}" (SQLite), ${context.operation}`;
  switch (code) {
    case "SCHEMA":
      return new SchemaError(
        `${where}: ${native}. Create the table and its columns as the description says (see driver.schemaSql(table)).`,
        { ...options, statement: context.statement },
      );
    case "CONSTRAINT":
      return new ConstraintError(
        `${where}: the database refused the write because it breaks a constraint (${native}). Nothing was written.`,
        options,
      );
    case "CONNECTION_TIMEOUT":
      return new ConnectionTimeoutError(
        `${where}: the database stayed locked by another connection past the bounded wait (busyTimeout, then busyRetry) (${native}). Shorten the other connection's transactions, or raise busyRetry.attempts.`,
        { ...options, waitedMs: Number.NaN },
      );
    case "INVALID_ARGUMENT":
      return new InvalidArgumentError(
        `${where}: the database refused a value (${native}). Check the values published against the table's constraints.`,
        options,
      );
    case "CLOSED":
      return new ClosedError(
        `${where}: the SQLite database is closed. Create a new driver and broker.`,
        options,
      );
    default:
      return error;
  }
}
