/**
 * `@rowclaim/mysql`: the rowclaim driver for MySQL 8.0.1+ and MariaDB 10.6+ on mysql2, with the
 * row lock, lease and advisory lock claim forms and FIFO groups.
 *
 * @packageDocumentation
 */

export {
  createMysqlDriver,
  MysqlDriver,
  type MysqlDriverOptions,
  mysqlCapabilities,
} from "./mysql-driver.js";
export {
  classifyError,
  codeForError,
  type ErrorClass,
  errnoClasses,
  normalizeError,
} from "./normalize-error.js";
export { ownPoolOptions } from "./own-pool.js";
export type {
  ConnectionLike,
  PoolLike,
  QueryableLike,
  QueryOptionsLike,
  ResultHeaderLike,
} from "./pool-like.js";
export { scheduleLedgerSchemaSql } from "./schedule-sql.js";
export type { ServerInfo } from "./server-info.js";
export {
  createTableSql,
  insertStatement,
  lockNameExpression,
  quoteIdentifier,
  quoteTable,
  TableStatements,
} from "./sql.js";
export { parseServerVersion, type ServerFamily, type ServerVersion, versionFloors } from "./version.js";
