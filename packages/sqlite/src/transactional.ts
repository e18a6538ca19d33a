/**
 * Transactional handlers on SQLite: the body and then the settlement run on the driver's handle
 * inside one `BEGIN IMMEDIATE` transaction. The handle is shared by the whole process, so the
 * body must be synchronous (one that returns a promise is rolled back and refused with
 * `INVALID_ARGUMENT`); only the `BEGIN` is retried on `SQLITE_BUSY`, before the body runs. The
 * lease token is fenced before the transaction opens; an advisory key stays held until it ends.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import {
  formLabels,
  isPromiseLike,
  type Settlement,
  type TransactionWork,
  transactionalLeaseLost,
  transactionalRowGone,
} from "@rowclaim/core/driver";
import { type BusyRetryPolicy, retryBusy } from "./busy-retry.js";
import type { SqliteDatabase } from "./database.js";
import { isBusyError, normalizeError } from "./normalize-error.js";
import type { SettlementStatements } from "./settle.js";
import { transactionStatements } from "./transaction.js";

/** Why a transactional body failed: its own error, kept apart from the driver's. */
class BodyFailure {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

/** What one transactional handler run needs. */
interface SqliteTransactionOptions {
  readonly db: SqliteDatabase;
  readonly busy: BusyRetryPolicy;
  readonly table: TableDefinition;
  readonly id: RowId;
  /** The lease token the settlement must find (lease form), or `undefined` (advisory lock form). */
  readonly token: Date | undefined;
  readonly settlements: SettlementStatements;
  readonly work: TransactionWork;
  /** Called when the body failed (threw, or returned a promise): its writes are rolled back, the row is still held. */
  readonly onBodyFailure?: () => void;
}

/**
 * Runs `BEGIN IMMEDIATE`, the body, the settlement and `COMMIT` in one synchronous step. A body
 * that throws is rolled back and its error rethrown; a settlement that finds no row fails with `LEASE_LOST`.
 */
export async function sqliteTransaction(options: SqliteTransactionOptions): Promise<void> {
  const { db, busy, table, id, token, settlements, work } = options;
  const statements = transactionStatements(db);
  const form = formLabels[table.form];
  let settlement: Settlement | undefined;
  let changed: number;
  try {
    changed = await retryBusy(db, busy, () => {
      // Contention here is retried: the body has not run yet.
      statements.begin.immediate.run();
      try {
        let result: Settlement | Promise<Settlement>;
        try {
          result = work(db);
        } catch (error) {
          throw new BodyFailure(error);
        }
        if (isPromiseLike(result)) {
          // Settle the promise quietly: its failure is not the caller's any more.
          Promise.resolve(result).catch(() => undefined);
          throw new BodyFailure(
            new InvalidArgumentError(
              `Table "${table.name}" (SQLite, ${form} form): the transaction body returned a promise. On SQLite the body runs synchronously inside the IMMEDIATE transaction (better-sqlite3 is synchronous, and nothing else may run on the handle meanwhile): run its statements without await and return the outcome itself. Its writes were rolled back.`,
              { table: table.name },
            ),
          );
        }
        settlement = result;
        const count = settlements.apply(id, token, result);
        if (count !== 0) statements.commit.run();
        else statements.rollback.run();
        return count;
      } catch (error) {
        if (db.inTransaction) statements.rollback.run();
        // The body ran: contention from here on must not run it again.
        if (!(error instanceof BodyFailure) && isBusyError(error)) {
          throw normalizeError(error, { table: table.name, operation: "a transactional handler" });
        }
        throw error;
      }
    });
  } catch (error) {
    if (error instanceof BodyFailure) {
      options.onBodyFailure?.();
      throw error.error;
    }
    throw normalizeError(error, {
      table: table.name,
      operation: `a transactional handler's ${settlement?.kind ?? "transaction"} of row ${String(id)}`,
    });
  }
  if (changed === 0) {
    const kind = settlement?.kind ?? "settlement";
    throw table.form === "lease"
      ? transactionalLeaseLost(table, id, token, kind)
      : transactionalRowGone(table, id, kind);
  }
}
