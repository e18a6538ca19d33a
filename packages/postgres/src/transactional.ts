/**
 * Transactional handlers on PostgreSQL: the client and dialect side of core's algorithm
 * (`runRowLockTransaction`, …): the body, then the settlement, in one transaction.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  bodyRunning as clientRunning,
  formLabels,
  type LeaseToken,
  runAdvisoryTransaction,
  runLeaseTransaction,
  runRowLockTransaction,
  type TransactionDialect,
  type TransactionSession,
  type TransactionStep,
  type TransactionWork,
} from "@rowclaim/core/driver";
import { HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import type { Settlements } from "./settle.js";
import { beginSql, commitSql, rollbackSql } from "./sql.js";

/** A held connection as core's algorithm sees it. */
interface PgTransactionSession extends TransactionSession {
  readonly connection: HeldConnection;
}

function sessionOf(connection: HeldConnection): PgTransactionSession {
  return {
    connection,
    client: connection.client,
    text: (sql) => connection.text(sql),
    get broken() {
      return connection.broken !== undefined;
    },
    markBroken: (reason) => connection.markBroken(reason),
    get released() {
      return connection.released;
    },
    release: () => connection.release(),
  };
}

/**
 * Whether a transactional body is running on `connection` now. A claimer giving such a
 * connection up destroys it rather than roll back or unlock on it: the body's later statements must fail.
 */
export function bodyRunning(connection: HeldConnection): boolean {
  return clientRunning(connection.client);
}

/** Releases `connection` where it is given up during a body ({@link bodyRunning}) or broke; `true` once released. */
export function releasedIfUnusable(connection: HeldConnection): boolean {
  if (connection.released) return true;
  if (bodyRunning(connection))
    connection.markBroken(new Error("rowclaim: given up during a transactional body"));
  if (connection.broken === undefined) return false;
  connection.release();
  return true;
}

/** What failed, as the error context says it. */
const stepLabels: Readonly<Record<Exclude<TransactionStep, "settle">, string>> = {
  acquire: "transactional handler",
  savepoint: "savepoint",
  begin: "begin",
  releaseSavepoint: "release savepoint",
  commit: "commit",
};

/** PostgreSQL's statements and settlement for `table`. */
function dialectFor(
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
): TransactionDialect<PgTransactionSession> {
  return {
    savepoint: "SAVEPOINT rowclaim_handler",
    rollbackToSavepoint: "ROLLBACK TO SAVEPOINT rowclaim_handler",
    releaseSavepoint: "RELEASE SAVEPOINT rowclaim_handler",
    commit: commitSql,
    rollback: rollbackSql,
    begin: (session, form) => session.text(form === "lease" ? beginSql(table.isolation) : "BEGIN"),
    apply: (session, settlement, expiry) => settlements.apply(session.connection, id, settlement, expiry),
    normalize: (error, step, settlement) =>
      normalizeError(error, {
        table: table.name,
        operation: `${formLabels[table.form]} ${step === "settle" ? `${settlement?.kind} settlement (transactional)` : stepLabels[step]}`,
      }),
  };
}

/** Row lock form: the body and its settlement inside the batch's transaction, behind a savepoint. */
export function rowLockTransaction(
  connection: HeldConnection,
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
): Promise<void> {
  return runRowLockTransaction(sessionOf(connection), dialectFor(settlements, table, id), work);
}

/** Lease form: `BEGIN` on a connection of its own, the body, the fenced settlement, `COMMIT`. */
export function leaseTransaction(
  pool: PoolLike,
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
  fence: () => Promise<LeaseToken>,
  signal: AbortSignal,
): Promise<void> {
  const acquire = async (): Promise<PgTransactionSession> => sessionOf(await HeldConnection.acquire(pool));
  return runLeaseTransaction(acquire, dialectFor(settlements, table, id), { table, id }, work, fence, signal);
}

/** Advisory lock form: `BEGIN` on the key's session, the body, the settlement, `COMMIT`, then `release`. */
export function advisoryTransaction(
  connection: HeldConnection,
  settlements: Settlements,
  table: TableDefinition,
  id: RowId,
  key: string,
  work: TransactionWork,
  release: () => Promise<void>,
): Promise<void> {
  const dialect = dialectFor(settlements, table, id);
  return runAdvisoryTransaction(sessionOf(connection), dialect, { table, id, key }, work, release);
}
