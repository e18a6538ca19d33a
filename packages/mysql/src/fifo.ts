/**
 * FIFO group guards: one `GET_LOCK` per group (`TableStatements.fifoGroupLock`) on the claim's
 * session, so a claim locks no row but the head. Row lock form: taken without waiting and kept
 * until the batch's transaction ends. Lease form: waited for, and given up once the claim commits.
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

/** A function that gives the group's guard back on `connection`: whether the server confirmed it (else the caller closes the session). */
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
  try {
    return dueHead(await selectRows(connection, guard.sql, guard.values));
  } catch (error) {
    if (classifyError(error).lockNotAvailable) return null;
    throw error;
  }
}

/** The lease form's head of the group if it is due and no row of the group holds a live lease, else `null`. */
export async function leaseFifoHead(
  connection: QueryableLike,
  statements: TableStatements,
  now: Date,
): Promise<RowId | null> {
  const guard = statements.leaseFifoGuard(now);
  const rows = await selectRows(connection, guard.sql, guard.values);
  return rows.some((row) => Number(row[2]) === 1) ? null : dueHead(rows);
}

/** The id of the head read (columns id, due) if it is due, else `null`. */
function dueHead([head]: unknown[][]): RowId | null {
  return head !== undefined && Number(head[1]) === 1 ? (head[0] as RowId) : null;
}
