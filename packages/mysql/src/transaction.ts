/**
 * Opening and ending a claim's transaction on a connection of its own.
 *
 * @module
 */
import type { IsolationLevel } from "@rowclaim/core";
import { classifyError } from "./normalize-error.js";
import { type ConnectionLike, letGo, run } from "./pool-like.js";
import { transactionSql } from "./sql.js";

/**
 * The sessions whose default isolation level the driver set itself, with that level: the
 * sessions of the driver's own pool (`src/own-pool.ts`), which run `SET SESSION TRANSACTION
 * ISOLATION LEVEL READ COMMITTED` once, when they connect. Keyed by mysql2's connection object
 * (what a pool's `connection` event passes, and what a `mysql2/promise` pool connection wraps as
 * `.connection`), so the mark lives exactly as long as the session.
 */
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

/**
 * Starts a transaction at `level`: `START TRANSACTION` alone on a session known to run at
 * `level` by default (the driver's own pool at READ COMMITTED), else `SET TRANSACTION ISOLATION
 * LEVEL …` (the next transaction only: a pool the user owns keeps its sessions' defaults), then
 * `START TRANSACTION`. Setting the level once per session saves a round trip a claim.
 */
export async function beginAt(connection: ConnectionLike, level: IsolationLevel): Promise<void> {
  if (sessionLevels.get(sessionOf(connection)) !== level) {
    await run(connection, transactionSql.isolation(level));
  }
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
