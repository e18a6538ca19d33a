/**
 * `@rowclaim/postgres/executor`: the PostgreSQL driver on a client of your choosing, for driver
 * authors. {@link createPostgresDriverOn} runs every claimer, publisher, probe and LISTEN of
 * `@rowclaim/postgres` on a pool shaped like {@link PoolLike}, which an adapter of another
 * client (postgres.js, a serverless driver) implements; this entry point does not load `pg`.
 * See DRIVERS.md, "A driver for another client of the same database".
 *
 * @packageDocumentation
 */
export { ArrayParam, type RenderValue } from "./array-param.js";
export { channelFor } from "./listen.js";
export {
  codeForError,
  isClaimConflict,
  isConnectionLost,
  normalizeError,
  sqlStateOf,
} from "./normalize-error.js";
export type {
  NotificationLike,
  PoolClientLike,
  PoolLike,
  QueryableLike,
  QueryConfigLike,
  QueryResultLike,
} from "./pool-like.js";
export {
  checkExecutorOptions,
  createPostgresDriverOn,
  type ExecutorDriverMaker,
  executorOptionKeys,
  type PostgresExecutorDriver,
  type PostgresExecutorOptions,
} from "./postgres-driver.js";
