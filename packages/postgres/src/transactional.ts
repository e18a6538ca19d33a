/**
 * Transactional handlers on PostgreSQL: the session and dialect the claimers hand to core's
 * `runRowLockTransaction`, `runLeaseTransaction` and `runAdvisoryTransaction`.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  bodyRunning as clientRunning,
  formLabels,
  type TransactionDialect,
  type TransactionSession,
  type TransactionStep,
} from "@rowclaim/core/driver";
import type { HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { Settlements } from "./settle.js";
import { beginSql, commitSql, rollbackSql } from "./sql.js";

/** A held connection as core's algorithm sees it. */
export interface PgTransactionSession extends TransactionSession {
  readonly connection: HeldConnection;
}

/** `connection` as core's transaction runner sees it. */
export function sessionOf(connection: HeldConnection): PgTransactionSession {
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

/** PostgreSQL's statements and settlement of row `id` of `table`, for core's transaction runner. */
export function dialectFor(
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
