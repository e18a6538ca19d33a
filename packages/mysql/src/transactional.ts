/**
 * Transactional handlers on MySQL/MariaDB: the mysql2 session and dialect under core's
 * `runRowLockTransaction`, `runLeaseTransaction` and `runAdvisoryTransaction`.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  type LeaseToken,
  runAdvisoryTransaction,
  runLeaseTransaction,
  runRowLockTransaction,
  type TransactionDialect,
  type TransactionSession,
  type TransactionStep,
  type TransactionWork,
} from "@rowclaim/core/driver";
import { classifyError, normalizeError } from "./normalize-error.js";
import { type ConnectionLike, letGo, type PoolLike, run } from "./pool-like.js";
import { applySettlement } from "./settle.js";
import { type SettlementStatements, transactionSql } from "./sql.js";
import { beginAt } from "./transaction.js";

/** A mysql2 connection as core's algorithm sees it; one that lost its session is closed on release. */
class MysqlTransactionSession implements TransactionSession {
  readonly client: ConnectionLike;
  #broken = false;
  #released = false;

  constructor(client: ConnectionLike) {
    this.client = client;
  }

  async text(sql: string): Promise<unknown> {
    try {
      return await run(this.client, sql);
    } catch (error) {
      if (classifyError(error).connectionLost) this.#broken = true;
      throw error;
    }
  }

  get broken(): boolean {
    return this.#broken;
  }

  markBroken(): void {
    this.#broken = true;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    letGo(this.client, this.#broken);
  }
}

/** What the driver was doing, as the error context says it. */
function operationOf(form: TableDefinition["form"], step: TransactionStep, kind: string | undefined): string {
  const base = `${form === "rowLock" ? "row lock" : form} transactional handler`;
  if (form === "advisory" || step === "acquire" || step === "begin" || step === "savepoint") return base;
  return `${base} (${step === "commit" ? "commit" : kind})`;
}

/** MySQL's statements and settlement for `table`. */
function dialectFor(
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
): TransactionDialect<MysqlTransactionSession> {
  return {
    savepoint: "SAVEPOINT rowclaim_handler",
    rollbackToSavepoint: "ROLLBACK TO SAVEPOINT rowclaim_handler",
    releaseSavepoint: "RELEASE SAVEPOINT rowclaim_handler",
    commit: transactionSql.commit,
    rollback: transactionSql.rollback,
    begin: (session, form) =>
      form === "lease"
        ? beginAt(session.client, table.isolation ?? "read committed")
        : session.text(transactionSql.begin),
    apply: (session, settlement, expiry) =>
      applySettlement(session.client, settlements, settlement, id, expiry, "inTransaction"),
    normalize: (error, step, settlement) =>
      normalizeError(error, {
        table: table.name,
        operation: operationOf(table.form, step, settlement?.kind),
      }),
  };
}

/** Row lock form: the body and its settlement inside the batch's transaction, behind a savepoint. */
export function rowLockTransaction(
  connection: ConnectionLike,
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
): Promise<void> {
  return runRowLockTransaction(
    new MysqlTransactionSession(connection),
    dialectFor(settlements, table, id),
    work,
  );
}

/** Lease form: a transaction on a connection of its own, the body, the fenced settlement, `COMMIT`. */
export function leaseTransaction(
  pool: PoolLike,
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
  work: TransactionWork,
  fence: () => Promise<LeaseToken>,
  signal: AbortSignal,
): Promise<void> {
  const acquire = async (): Promise<MysqlTransactionSession> =>
    new MysqlTransactionSession(await pool.getConnection());
  return runLeaseTransaction(acquire, dialectFor(settlements, table, id), { table, id }, work, fence, signal);
}

/** Advisory lock form: a transaction on the lock's session, the body, the settlement, `COMMIT`, then `release`. */
export function advisoryTransaction(
  connection: ConnectionLike,
  settlements: SettlementStatements,
  table: TableDefinition,
  id: RowId,
  key: string,
  work: TransactionWork,
  release: () => Promise<void>,
): Promise<void> {
  const session = new MysqlTransactionSession(connection);
  return runAdvisoryTransaction(
    session,
    dialectFor(settlements, table, id),
    { table, id, key },
    work,
    release,
  );
}
