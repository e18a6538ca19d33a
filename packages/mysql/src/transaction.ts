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

/** Commits and returns the connection to its pool; on failure the connection is closed and the error thrown. */
export async function commitAndRelease(connection: ConnectionLike): Promise<void> {
  try {
    await run(connection, transactionSql.commit);
  } catch (error) {
    letGo(connection, true);
    throw error;
  }
  letGo(connection, false);
}

/**
 * Rolls back and returns the connection to its pool. A connection that cannot roll back (killed,
 * network gone: the server already rolled back with the session) is closed instead, quietly;
 * other failures close it and are thrown.
 */
export async function rollbackAndRelease(connection: ConnectionLike, cause?: unknown): Promise<void> {
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
  letGo(connection, false);
}
