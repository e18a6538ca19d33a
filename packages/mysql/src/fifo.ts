/**
 * FIFO group guards: a claim in a FIFO table takes only the head of its group, and nothing while
 * another row of the group is in work. The guard is one named lock per group, `GET_LOCK` on the
 * table and group's name (see `TableStatements.fifoGroupLock`), taken on the claim's session, so
 * brokers in separate processes keep a group's order, and a claim locks no row but the head it
 * takes (never every unfinished row of the group):
 *
 * - Row lock form: the claim takes the guard without waiting and keeps it, with the head's row
 *   lock, until its transaction ends (the handler runs in between); a claim that finds the guard
 *   held takes nothing. Under the guard the head is read `LIMIT 1 FOR UPDATE NOWAIT`.
 * - Lease form: the claim waits for the guard (another claim of the group holds it only while it
 *   commits), takes nothing while a row of the group holds a live lease, else locks the head
 *   (`LIMIT 1 FOR UPDATE`), takes it and commits, then gives the guard up.
 *
 * A session that ends (a crash) drops its guard with it.
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import { classifyError } from "./normalize-error.js";
import { type ConnectionLike, type QueryableLike, selectRows } from "./pool-like.js";
import type { TableStatements } from "./sql.js";

/** How long a lease claim waits for its group's guard, in seconds, before it takes nothing this time. */
export const LEASE_GUARD_WAIT_SECONDS = 5;

/** Takes the group's guard on `connection`, waiting up to `waitSeconds`; whether it was taken. */
export async function takeFifoGuard(
  connection: QueryableLike,
  statements: TableStatements,
  waitSeconds: number,
): Promise<boolean> {
  const lock = statements.fifoGroupLock(waitSeconds);
  const rows = await selectRows(connection, lock.sql, lock.values);
  return Number(rows[0]?.[0]) === 1;
}

/**
 * A function that gives the group's guard back on `connection` (after its transaction ended):
 * whether the server confirmed it. A guard not confirmed makes the caller close the session,
 * which drops it.
 */
export function fifoGuardRelease(
  statements: TableStatements,
): (connection: ConnectionLike) => Promise<boolean> {
  return async (connection) => {
    try {
      const unlock = statements.fifoGroupUnlock();
      const rows = await selectRows(connection, unlock.sql, unlock.values);
      return Number(rows[0]?.[0]) === 1;
    } catch {
      return false;
    }
  };
}

/** The row lock form's head of the group if it is due and nothing of the group is in work, else `null`. */
export async function rowLockFifoHead(
  connection: QueryableLike,
  statements: TableStatements,
  now: Date,
): Promise<RowId | null> {
  const guard = statements.rowLockFifoGuard(now);
  let rows: unknown[][];
  try {
    rows = await selectRows(connection, guard.sql, guard.values);
  } catch (error) {
    if (classifyError(error).lockNotAvailable) return null;
    throw error;
  }
  const head = rows[0];
  return head !== undefined && Number(head[1]) === 1 ? (head[0] as RowId) : null;
}

/** The lease form's head of the group if it is due and no row of the group holds a live lease, else `null`. */
export async function leaseFifoHead(
  connection: QueryableLike,
  statements: TableStatements,
  now: Date,
): Promise<RowId | null> {
  const guard = statements.leaseFifoGuard(now);
  const rows = await selectRows(connection, guard.sql, guard.values);
  if (rows.some((row) => Number(row[2]) === 1)) return null;
  const head = rows[0];
  return head !== undefined && Number(head[1]) === 1 ? (head[0] as RowId) : null;
}
