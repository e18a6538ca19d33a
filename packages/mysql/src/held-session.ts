/**
 * The driver's {@link ConnectionSession} for core's `onConnection`: a connection of the bounded
 * pool, with `START TRANSACTION`, `COMMIT` and `ROLLBACK`.
 *
 * @module
 */
import type { ConnectionSession } from "@rowclaim/core/driver";
import { type ConnectionLike, letGo, type PoolLike, run } from "./pool-like.js";
import { transactionSql } from "./sql.js";

/** A connection of `pool`, held for one short statement or transaction. */
export function heldSession(pool: PoolLike): ConnectionSession<ConnectionLike> {
  return {
    acquire: () => pool.getConnection(),
    begin: (connection) => run(connection, transactionSql.begin),
    commit: (connection) => run(connection, transactionSql.commit),
    rollback: (connection) => run(connection, transactionSql.rollback),
    release: letGo,
  };
}
