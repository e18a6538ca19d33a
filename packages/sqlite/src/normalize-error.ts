/**
 * Maps better-sqlite3's native errors (`SqliteError` with an `SQLITE_*` code, and the
 * `TypeError` it throws on a closed connection) onto rowclaim's error codes.
 *
 * @module
 */
import { BrokerError, type BrokerErrorCode } from "@rowclaim/core";
import { type ErrorContext, nativeErrorNormalizer } from "@rowclaim/core/driver";

/** The native error's `SQLITE_*` code (extended codes included), or `undefined`. */
function sqliteCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}

/** Whether the error is transient lock contention (`SQLITE_BUSY*`, `SQLITE_LOCKED*`), which the driver retries. */
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
 * Turns a native error into the rowclaim error it stands for, with the native error as `cause`;
 * returns the error unchanged where there is no mapping (or it already is a rowclaim error).
 */
export const normalizeError: (error: unknown, context: ErrorContext) => unknown =
  nativeErrorNormalizer<ErrorContext>({
    codeOf: codeForError,
    where: (context) => `Table "${context.table}" (SQLite), ${context.operation}`,
    sentences: {
      SCHEMA: (where, native) =>
        `${where}: ${native}. Create the table and its columns as the description says (see driver.schemaSql(table)).`,
      CONSTRAINT: (where, native) =>
        `${where}: the database refused the write because it breaks a constraint (${native}). Nothing was written.`,
      CONNECTION_TIMEOUT: (where, native) =>
        `${where}: the database stayed locked by another connection past the bounded wait (busyTimeout, then busyRetry) (${native}). Shorten the other connection's transactions, or raise busyRetry.attempts.`,
      INVALID_ARGUMENT: (where, native) =>
        `${where}: the database refused a value (${native}). Check the values published against the table's constraints.`,
      CLOSED: (where) => `${where}: the SQLite database is closed. Create a new driver and broker.`,
    },
  });
