/**
 * Short write transactions on a better-sqlite3 connection, around synchronous work: nothing
 * awaits inside, so no other work of the process interleaves with them.
 *
 * @module
 */
import type { TransactionMode } from "@rowclaim/core";
import type { SqliteDatabase, SqliteStatement } from "./database.js";

/** A handle's transaction control statements. */
interface TransactionStatements {
  readonly begin: Readonly<Record<TransactionMode, SqliteStatement>>;
  readonly commit: SqliteStatement;
  readonly rollback: SqliteStatement;
}

const prepared = new WeakMap<SqliteDatabase, TransactionStatements>();

/** The prepared `BEGIN …`, `COMMIT` and `ROLLBACK` of `db`, made once per handle. */
export function transactionStatements(db: SqliteDatabase): TransactionStatements {
  let statements = prepared.get(db);
  if (statements === undefined) {
    statements = {
      begin: {
        deferred: db.prepare("BEGIN DEFERRED"),
        immediate: db.prepare("BEGIN IMMEDIATE"),
        exclusive: db.prepare("BEGIN EXCLUSIVE"),
      },
      commit: db.prepare("COMMIT"),
      rollback: db.prepare("ROLLBACK"),
    };
    prepared.set(db, statements);
  }
  return statements;
}

/** Runs `work` inside a transaction of `mode` and commits; rolls back and rethrows when `work` (or the commit) throws. */
export function inTransaction<T>(db: SqliteDatabase, mode: TransactionMode, work: () => T): T {
  const statements = transactionStatements(db);
  statements.begin[mode].run();
  try {
    const result = work();
    statements.commit.run();
    return result;
  } catch (error) {
    if (db.inTransaction) statements.rollback.run();
    throw error;
  }
}
