/**
 * Transactional handlers on MySQL/MariaDB: the handler's body runs on a mysql2 connection inside
 * a transaction, and the settlement runs last in the same transaction.
 *
 * - Row lock form: the claim's open transaction, behind `SAVEPOINT rowclaim_handler`, so that a
 *   body that throws takes back its own writes and no other row's.
 * - Lease form: a transaction of its own (READ COMMITTED unless the table names a level) on one
 *   connection; the settlement is fenced by the token the delivery holds once the body is done,
 *   and a row that no longer holds it rolls everything back (`LEASE_LOST`).
 * - Advisory lock form: a transaction on the delivery's own connection, whose session holds the
 *   `GET_LOCK` name.
 *
 * @module
 */
import { LeaseLostError, type RowId, type TableDefinition } from "@rowclaim/core";
import type { LeaseToken, Settlement, TransactionWork } from "@rowclaim/core/driver";
import { normalizeError } from "./normalize-error.js";
import { type ConnectionLike, letGo, type PoolLike, run } from "./pool-like.js";
import { applySettlement } from "./settle.js";
import { type SettlementStatements, transactionSql } from "./sql.js";
import { beginAt, commitAndRelease, rollbackAndRelease } from "./transaction.js";

/** The savepoint a row lock body runs behind. */
const savepoint = "rowclaim_handler";

/** Connections on which a transactional body is running now. */
const running = new WeakSet<ConnectionLike>();

/**
 * Whether a transactional body is running on `connection` now. A claimer giving such a
 * connection up (the broker closing past its timeout) closes it rather than roll back or unlock on
 * it: the body's later statements must fail, not run outside the transaction.
 */
export function bodyRunning(connection: ConnectionLike): boolean {
  return running.has(connection);
}

/** Runs the body; on failure undoes its writes with `undo` (quietly) and rethrows the body's error unchanged. */
async function runBody(
  connection: ConnectionLike,
  work: TransactionWork,
  undo: () => Promise<unknown>,
): Promise<Settlement> {
  running.add(connection);
  try {
    return await work(connection);
  } catch (error) {
    await undo().catch(() => undefined);
    throw error;
  } finally {
    running.delete(connection);
  }
}

/**
 * Row lock form: the body and its settlement inside the batch's transaction, behind a savepoint.
 * A body that throws rolls back to the savepoint; its error is rethrown unchanged.
 */
export async function rowLockTransaction(
  connection: ConnectionLike,
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
): Promise<void> {
  const operation = "row lock transactional handler";
  try {
    await run(connection, `SAVEPOINT ${savepoint}`);
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation });
  }
  const settlement = await runBody(connection, work, () =>
    run(connection, `ROLLBACK TO SAVEPOINT ${savepoint}`),
  );
  try {
    await applySettlement(connection, settlements, settlement, id, undefined, "inTransaction");
    await run(connection, `RELEASE SAVEPOINT ${savepoint}`);
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation: `${operation} (${settlement.kind})` });
  }
}

/**
 * Lease form: a transaction on a connection of its own, the body, then the settlement fenced by
 * the token `fence` gives, then `COMMIT`. A row that holds another token rolls back and throws
 * `LEASE_LOST`: a worker that lost its lease leaves no writes behind.
 */
export async function leaseTransaction(
  pool: PoolLike,
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
  fence: () => Promise<LeaseToken>,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) throw signal.reason;
  const operation = "lease transactional handler";
  let connection: ConnectionLike;
  try {
    connection = await pool.getConnection();
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation });
  }
  try {
    await beginAt(connection, table.isolation ?? "read committed");
  } catch (error) {
    await rollbackAndRelease(connection, error).catch(() => undefined);
    throw normalizeError(error, { table: table.name, operation });
  }
  let settlement: Settlement;
  let token: LeaseToken;
  // Given up (or the lease lost) while the body runs: close the session, so its next statement fails.
  const giveUp = (): void => {
    if (running.has(connection)) letGo(connection, true);
  };
  signal.addEventListener("abort", giveUp, { once: true });
  try {
    running.add(connection);
    try {
      settlement = await work(connection);
    } finally {
      running.delete(connection);
      signal.removeEventListener("abort", giveUp);
    }
    token = await fence();
  } catch (error) {
    await rollbackAndRelease(connection).catch(() => undefined);
    // Cut off by the abort: say why (CLOSED, LEASE_LOST) rather than how the session ended.
    throw signal.aborted ? signal.reason : error;
  }
  let matched: number;
  try {
    matched = await applySettlement(connection, settlements, settlement, id, token.expiry, "inTransaction");
  } catch (error) {
    await rollbackAndRelease(connection, error).catch(() => undefined);
    throw normalizeError(error, { table: table.name, operation: `${operation} (${settlement.kind})` });
  }
  if (matched === 0) {
    await rollbackAndRelease(connection).catch(() => undefined);
    throw new LeaseLostError(
      `Table "${table.name}" (lease form): row ${String(id)} no longer holds this delivery's lease (expiry ${token.expiry.toISOString()}), so the transactional handler's writes and its ${settlement.kind} settlement were rolled back. The lease ran out and another claim took the row, or the row is gone. Make the lease longer than the handler can stall, or keep lease extension on.`,
      { table: table.name },
    );
  }
  try {
    await commitAndRelease(connection);
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation: `${operation} (commit)` });
  }
}

/**
 * Advisory lock form: a transaction on the delivery's own connection (the lock's session), the
 * body, the settlement, `COMMIT`, then `release` (unlock and return the connection). A body that
 * throws rolls back and keeps the lock and the connection; its error is rethrown unchanged. Any
 * other failure rolls back, releases and throws.
 */
export async function advisoryTransaction(
  connection: ConnectionLike,
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
  key: string,
  work: TransactionWork,
  release: () => Promise<void>,
): Promise<void> {
  const operation = "advisory transactional handler";
  try {
    await run(connection, transactionSql.begin);
  } catch (error) {
    await release().catch(() => undefined);
    throw normalizeError(error, { table: table.name, operation });
  }
  const settlement = await runBody(connection, work, () => run(connection, transactionSql.rollback));
  let failure: unknown;
  try {
    const matched = await applySettlement(
      connection,
      settlements,
      settlement,
      id,
      undefined,
      "inTransaction",
    );
    if (matched === 0) {
      throw new LeaseLostError(
        `Table "${table.name}" (advisory lock form): the transactional ${settlement.kind} settlement of row ${String(id)} found the row gone or finished while its key "${key}" was held (deleted or settled by hand?); the handler's writes were rolled back.`,
        { table: table.name },
      );
    }
    await run(connection, transactionSql.commit);
  } catch (error) {
    failure = keepOrNormalize(error, table, operation);
    await run(connection, transactionSql.rollback).catch(() => undefined);
  }
  try {
    await release();
  } catch (error) {
    failure ??= error;
  }
  if (failure !== undefined) throw failure;
}

/** Keeps a rowclaim error as it is; normalizes a database error. */
function keepOrNormalize(error: unknown, table: TableDefinition, operation: string): unknown {
  return error instanceof LeaseLostError ? error : normalizeError(error, { table: table.name, operation });
}
