/**
 * `@rowclaim/sqlite`: the rowclaim driver for SQLite on better-sqlite3, offering the lease form
 * (with FIFO groups) and the advisory lock form (keys kept in the process).
 *
 * @packageDocumentation
 */
export type { BusyRetryOptions } from "./busy-retry.js";
export type { SqliteDatabase, SqliteRunResult, SqliteStatement } from "./database.js";
export { codeForError, isBusyError, normalizeError } from "./normalize-error.js";
export { scheduleLedgerSchemaSql } from "./schedule-sql.js";
export { SQLITE_VERSION_FLOOR, schemaSql } from "./schema-check.js";
export { quoteIdentifier } from "./sql.js";
export {
  createSqliteDriver,
  DEFAULT_BUSY_TIMEOUT_MS,
  type SqliteDatabaseOptions,
  SqliteDriver,
  type SqliteDriverCommonOptions,
  type SqliteDriverOptions,
  type SqliteFileOptions,
  sqliteCapabilities,
} from "./sqlite-driver.js";
