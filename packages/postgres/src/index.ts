/**
 * `@rowclaim/postgres`: the rowclaim driver for PostgreSQL on `pg` — row lock, lease and
 * advisory lock claim forms, FIFO groups, transactional publish and LISTEN/NOTIFY wake-up.
 *
 * @packageDocumentation
 */
export type { PostgresAdvisoryToken } from "./advisory.js";
export { channelFor } from "./listen.js";
export {
  codeForError,
  isClaimConflict,
  isConnectionLost,
  normalizeError,
  sqlStateCodes,
  sqlStateOf,
} from "./normalize-error.js";
export {
  createPostgresDriver,
  type PostgresConnectionOptions,
  type PostgresDriver,
  type PostgresDriverOptions,
} from "./pg-driver.js";
export type {
  NotificationLike,
  PoolClientLike,
  PoolLike,
  QueryableLike,
  QueryConfigLike,
  QueryResultLike,
} from "./pool-like.js";
export type { PostgresRowLockToken } from "./row-lock.js";
export { scheduleLedgerSchemaSql } from "./schedule-sql.js";
export { quoteIdent, schemaSql } from "./sql.js";
export {
  assertServerVersion,
  formatVersionNum,
  HASH_FLOOR,
  parseServerVersionNum,
  versionFloorFor,
} from "./version.js";
