/**
 * Transactional handlers on PostgreSQL: the handler's body runs on a `pg` client inside a
 * transaction, and the settlement runs last in the same transaction.
 *
 * - Row lock form: the claim's open transaction, behind `SAVEPOINT rowclaim_handler`, so that a
 *   body that throws takes back its own writes and no other row's.
 * - Lease form: `BEGIN` on a connection of its own; the settlement is fenced by the token the
 *   delivery holds once the body is done, and a row that no longer holds it rolls everything
 *   back (`LEASE_LOST`).
 * - Advisory lock form: `BEGIN` on the delivery's own connection, whose session holds the key.
 *
 * @module
 */
import { LeaseLostError, type RowId, type TableDefinition } from "@rowclaim/core";
import type { LeaseToken, Settlement, TransactionWork } from "@rowclaim/core/driver";
import { HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import type { Settlements } from "./settle.js";
import { beginSql, commitSql, rollbackSql } from "./sql.js";

/** The savepoint a row lock body runs behind. */
const savepoint = "rowclaim_handler";

/** The form's name as messages write it. */
type FormLabel = "row lock" | "lease" | "advisory lock";

/** Connections on which a transactional body is running now. */
const running = new WeakSet<HeldConnection>();

/**
 * Whether a transactional body is running on `connection` now. A claimer giving such a
 * connection up (the broker closing past its timeout) destroys it rather than roll back or unlock
 * on it: the body's later statements must fail, not run outside the transaction.
 */
export function bodyRunning(connection: HeldConnection): boolean {
  return running.has(connection);
}

/** Runs the body; on failure rolls back with `undo` (quietly) and rethrows the body's error unchanged. */
async function runBody(
  connection: HeldConnection,
  work: TransactionWork,
  undo: () => Promise<unknown>,
): Promise<Settlement> {
  running.add(connection);
  try {
    return await work(connection.client);
  } catch (error) {
    await undo().catch((undoError: unknown) => {
      connection.markBroken(undoError instanceof Error ? undoError : new Error(String(undoError)));
    });
    throw error;
  } finally {
    running.delete(connection);
  }
}

/** Applies the settlement inside the open transaction; returns the rows it changed. */
async function applyInside(
  connection: HeldConnection,
  settlements: Settlements,
  table: TableDefinition,
  form: FormLabel,
  id: RowId,
  settlement: Settlement,
  token?: Date,
): Promise<number | null> {
  try {
    return await settlements.apply(connection, id, settlement, token);
  } catch (error) {
    throw normalizeError(error, {
      table: table.name,
      form,
      statement: `${settlement.kind} settlement (transactional)`,
    });
  }
}

/**
 * Row lock form: the body and its settlement inside the batch's transaction, behind a savepoint.
 * A body that throws rolls back to the savepoint; its error is rethrown unchanged.
 */
export async function rowLockTransaction(
  connection: HeldConnection,
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
): Promise<void> {
  try {
    await connection.text(`SAVEPOINT ${savepoint}`);
  } catch (error) {
    throw normalizeError(error, { table: table.name, form: "row lock", statement: "savepoint" });
  }
  const settlement = await runBody(connection, work, () =>
    connection.text(`ROLLBACK TO SAVEPOINT ${savepoint}`),
  );
  await applyInside(connection, settlements, table, "row lock", id, settlement);
  try {
    await connection.text(`RELEASE SAVEPOINT ${savepoint}`);
  } catch (error) {
    throw normalizeError(error, { table: table.name, form: "row lock", statement: "release savepoint" });
  }
}

/**
 * Lease form: `BEGIN` on a connection of its own, the body, then the settlement fenced by the
 * token `fence` gives, then `COMMIT`. A row that holds another token rolls back and throws
 * `LEASE_LOST`: a worker that lost its lease leaves no writes behind.
 */
export async function leaseTransaction(
  pool: PoolLike,
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
  fence: () => Promise<LeaseToken>,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) throw signal.reason;
  let connection: HeldConnection;
  try {
    connection = await HeldConnection.acquire(pool);
  } catch (error) {
    throw normalizeError(error, { table: table.name, form: "lease", statement: "transactional handler" });
  }
  let committed = false;
  // Given up (or the lease lost) while the body runs: end the session, so its next statement fails.
  const giveUp = (): void => {
    if (!running.has(connection)) return;
    connection.markBroken(signal.reason instanceof Error ? signal.reason : new Error("given up"));
    connection.release();
  };
  signal.addEventListener("abort", giveUp, { once: true });
  try {
    try {
      await connection.text(beginSql(table.isolation));
    } catch (error) {
      throw normalizeError(error, { table: table.name, form: "lease", statement: "begin" });
    }
    const settlement = await runBody(connection, work, () => connection.text(rollbackSql)).catch(
      (error: unknown) => {
        // Cut off by the abort: say why (CLOSED, LEASE_LOST) rather than how the session ended.
        throw signal.aborted ? signal.reason : error;
      },
    );
    const token = await fence();
    const changed = await applyInside(connection, settlements, table, "lease", id, settlement, token.expiry);
    if (changed === 0) {
      throw new LeaseLostError(
        `Table "${table.name}" (lease form): row ${String(id)} no longer holds this delivery's lease (expiry ${token.expiry.toISOString()}), so the transactional handler's writes and its ${settlement.kind} settlement were rolled back. The lease ran out and another claim took the row, or the row is gone. Make the lease longer than a handler can stall, or keep lease extension on.`,
        { table: table.name },
      );
    }
    try {
      await connection.text(commitSql);
    } catch (error) {
      connection.markBroken(error instanceof Error ? error : new Error(String(error)));
      throw normalizeError(error, { table: table.name, form: "lease", statement: "commit" });
    }
    committed = true;
  } finally {
    if (!committed && !connection.released && connection.broken === undefined) {
      await connection.text(rollbackSql).catch((error: unknown) => {
        connection.markBroken(error instanceof Error ? error : new Error(String(error)));
      });
    }
    signal.removeEventListener("abort", giveUp);
    connection.release();
  }
}

/**
 * Advisory lock form: `BEGIN` on the delivery's own connection (the key's session), the body,
 * the settlement, `COMMIT`, then `release` (unlock and return the connection). A body that
 * throws rolls back and keeps the key and the connection; its error is rethrown unchanged. Any
 * other failure rolls back, releases and throws.
 */
export async function advisoryTransaction(
  connection: HeldConnection,
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
  key: string,
  work: TransactionWork,
  release: () => Promise<void>,
): Promise<void> {
  try {
    await connection.text("BEGIN");
  } catch (error) {
    await release().catch(() => undefined);
    throw normalizeError(error, { table: table.name, form: "advisory lock", statement: "begin" });
  }
  const settlement = await runBody(connection, work, () => connection.text(rollbackSql));
  let failure: unknown;
  let committed = false;
  try {
    const changed = await applyInside(connection, settlements, table, "advisory lock", id, settlement);
    if (changed === 0) {
      throw new LeaseLostError(
        `Table "${table.name}" (advisory lock form): the transactional ${settlement.kind} settlement of row ${String(id)} found the row gone or finished while its key "${key}" was held (deleted or settled by hand?); the handler's writes were rolled back.`,
        { table: table.name },
      );
    }
    try {
      await connection.text(commitSql);
    } catch (error) {
      connection.markBroken(error instanceof Error ? error : new Error(String(error)));
      throw normalizeError(error, { table: table.name, form: "advisory lock", statement: "commit" });
    }
    committed = true;
  } catch (error) {
    failure = error;
  }
  if (!committed && connection.broken === undefined) {
    await connection.text(rollbackSql).catch((error: unknown) => {
      connection.markBroken(error instanceof Error ? error : new Error(String(error)));
    });
  }
  try {
    await release();
  } catch (error) {
    failure ??= error;
  }
  if (failure !== undefined) throw failure;
}
