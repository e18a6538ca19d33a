/**
 * Opening and ending a claim's transaction on a connection of its own.
 *
 * @module
 */
import type { IsolationLevel } from "@rowclaim/core";
import { classifyError } from "./normalize-error.js";
import { type ConnectionLike, letGo, run } from "./pool-like.js";
import { transactionSql } from "./sql.js";

/** The sessions whose default isolation level the driver set itself (its own pool's), keyed by mysql2's connection object. */
const sessionLevels = new WeakMap<object, IsolationLevel>();

/** Records that `session` (a mysql2 connection) now runs its transactions at `level` by default. */
export function markSessionLevel(session: object, level: IsolationLevel): void {
  sessionLevels.set(session, level);
}

/** The mysql2 connection under a `mysql2/promise` pool connection (or the connection itself). */
function sessionOf(connection: ConnectionLike): object {
  const inner = (connection as { readonly connection?: unknown }).connection;
  return typeof inner === "object" && inner !== null ? inner : connection;
}

/** Starts a transaction at `level`: `SET TRANSACTION ISOLATION LEVEL …` first unless the session runs at `level` by default. */
export async function beginAt(connection: ConnectionLike, level: IsolationLevel): Promise<void> {
  if (sessionLevels.get(sessionOf(connection)) !== level) {
    await run(connection, transactionSql.isolation(level));
  }
  await run(connection, transactionSql.begin);
}

/** Gives back a session lock held beside the transaction (a FIFO group's guard) once it ended; `false` when not confirmed. */
export type SessionLockRelease = (connection: ConnectionLike) => Promise<boolean>;

/** Commits, gives back `guard`, and returns the connection; a failure or an unconfirmed guard closes it instead. */
export async function commitAndRelease(
  connection: ConnectionLike,
  guard?: SessionLockRelease,
): Promise<void> {
  try {
    await run(connection, transactionSql.commit);
  } catch (error) {
    letGo(connection, true);
    throw error;
  }
  letGo(connection, guard === undefined ? false : !(await guard(connection)));
}

/** Rolls back, gives back `guard`, and returns the connection; a lost session is closed quietly, other failures close it and throw. */
export async function rollbackAndRelease(
  connection: ConnectionLike,
  cause?: unknown,
  guard?: SessionLockRelease,
): Promise<void> {
  if (cause !== undefined && classifyError(cause).connectionLost) {
    letGo(connection, true);
    return;
  }
  try {
    await run(connection, transactionSql.rollback);
  } catch (error) {
    letGo(connection, true);
    if (classifyError(error).connectionLost) return;
    throw error;
  }
  letGo(connection, guard === undefined ? false : !(await guard(connection)));
}
