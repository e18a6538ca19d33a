/**
 * Opening and ending a claim's transaction on a connection of its own.
 *
 * @module
 */
import type { IsolationLevel } from "@rowclaim/core";
import { type ConnectionLike, letGo, run } from "./client.js";
import { classifyError } from "./normalize-error.js";
import { transactionSql } from "./sql.js";

/**
 * Starts a transaction at `level` (`SET TRANSACTION ISOLATION LEVEL …` applies to the next
 * transaction only, then `START TRANSACTION`).
 */
export async function beginAt(connection: ConnectionLike, level: IsolationLevel): Promise<void> {
  await run(connection, transactionSql.isolation(level));
  await run(connection, transactionSql.begin);
}

/**
 * Gives back a session lock the transaction's session holds beside it (a FIFO group's guard)
 * once the transaction ended; `false` when the server did not confirm it.
 */
export type SessionLockRelease = (connection: ConnectionLike) => Promise<boolean>;

/**
 * Commits and returns the connection to its pool (first giving back `guard`, if any; a guard not
 * confirmed closes the connection instead); on failure the connection is closed and the error
 * thrown.
 */
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

/**
 * Rolls back and returns the connection to its pool. A connection that cannot roll back (killed,
 * network gone: the server already rolled back with the session) is closed instead, quietly;
 * other failures close it and are thrown.
 */
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
