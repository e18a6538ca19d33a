/**
 * FIFO group guards: a claim in a FIFO table takes only the head of its group, and nothing while
 * another row of the group is in work. The guard is a locking read of the group's unfinished
 * rows inside the claim's transaction, so brokers in separate processes keep a group's order:
 *
 * - Row lock form: a row in work is locked by its delivery's open transaction. The guard reads
 *   the group's rows `FOR UPDATE NOWAIT`: while any is locked it fails at once (MariaDB 1205,
 *   MySQL 3572) and the claim takes nothing; otherwise it holds every row of the group, and the
 *   head is the first.
 * - Lease form: a row in work holds a lease past `now`. The guard reads the group's rows
 *   `FOR UPDATE` (waiting for a concurrent claim of the same group to commit); if any holds a
 *   live lease the claim takes nothing, else the head is the first.
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import { type QueryableLike, selectRows } from "./client.js";
import { classifyError } from "./normalize-error.js";
import type { TableStatements } from "./sql.js";

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
