/**
 * The driver's {@link ConnectionSession} for core's `onConnection`: a {@link HeldConnection} of the pool.
 *
 * @module
 */
import type { ConnectionSession } from "@rowclaim/core/driver";
import { HeldConnection } from "./connection.js";
import type { PoolLike } from "./pool-like.js";
import { beginSql, commitSql, rollbackSql } from "./sql.js";

/** A connection of `pool`, held for one short statement or transaction. */
export function heldSession(pool: PoolLike): ConnectionSession<HeldConnection> {
  return {
    acquire: () => HeldConnection.acquire(pool),
    begin: (connection) => connection.text(beginSql(undefined)),
    commit: (connection) => connection.text(commitSql),
    rollback: (connection) => connection.text(rollbackSql),
    release: (connection) => connection.release(),
  };
}
