/**
 * Applying settlements on SQLite, shared by the lease form (each statement guarded by the
 * delivery's token, `lockedUntil = @token`) and the advisory lock form (by id alone, under the
 * key the process holds). Statements are prepared once per claimer.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import type { AckSettlement, Settlement } from "@rowclaim/core/driver";
import { toEpochMs } from "./claimed-row.js";
import type { SqliteDatabase, SqliteStatement } from "./database.js";
import { checkSchema, type NamedStatement } from "./schema-check.js";
import { moveCopySql, type QuotedColumns, settlementSql } from "./sql.js";
import { inTransaction } from "./transaction.js";

interface MoveStatements {
  readonly copy: SqliteStatement;
  readonly remove: SqliteStatement;
}

/** The settlement statements of one claimer. */
export class SettlementStatements {
  readonly #db: SqliteDatabase;
  readonly #table: TableDefinition;
  readonly #columns: QuotedColumns;
  readonly #tokenGuard: boolean;
  readonly #delete: SqliteStatement;
  readonly #markProcessed: SqliteStatement | null;
  readonly #release: SqliteStatement | null;
  readonly #moveToGroup: SqliteStatement | null;
  readonly #moves = new Map<string, MoveStatements>();

  /** The SQL of the settlements, by name, for the schema check. */
  static named(columns: QuotedColumns, tokenGuard: boolean): NamedStatement[] {
    const sql = settlementSql(columns, tokenGuard);
    return [
      { name: "the delete settlement (ack)", sql: sql.delete },
      ...(sql.markProcessed === null
        ? []
        : [{ name: "the markProcessed settlement (ack)", sql: sql.markProcessed }]),
      ...(sql.release === null ? [] : [{ name: "the release settlement (retry)", sql: sql.release }]),
      ...(sql.moveToGroup === null
        ? []
        : [{ name: "the moveToGroup settlement (dead letter)", sql: sql.moveToGroup }]),
    ];
  }

  /**
   * Prepares every settlement statement, and the move to the table's dead-letter table when it
   * names one (checking that table's columns).
   */
  constructor(db: SqliteDatabase, table: TableDefinition, columns: QuotedColumns, tokenGuard: boolean) {
    this.#db = db;
    this.#table = table;
    this.#columns = columns;
    this.#tokenGuard = tokenGuard;
    const sql = settlementSql(columns, tokenGuard);
    this.#delete = db.prepare(sql.delete);
    this.#markProcessed = sql.markProcessed === null ? null : db.prepare(sql.markProcessed);
    this.#release = sql.release === null ? null : db.prepare(sql.release);
    this.#moveToGroup = sql.moveToGroup === null ? null : db.prepare(sql.moveToGroup);
    const deadLetter = table.deadLetter;
    if (deadLetter !== undefined && "table" in deadLetter) this.#move(deadLetter.table);
  }

  /**
   * Applies `settlement` to row `id` (where it still holds `token`, in the lease form) and
   * returns how many rows it changed: 0 means the row no longer matched, and nothing changed.
   * Synchronous; `moveToTable` runs in one transaction.
   */
  apply(id: RowId, token: Date | undefined, settlement: Settlement): number {
    const key = { id, token: token === undefined ? null : toEpochMs(token) };
    switch (settlement.kind) {
      case "delete":
        return this.#delete.run(key).changes;
      case "markProcessed":
        return this.#required(this.#markProcessed, "markProcessed", "processedAt").run({
          ...key,
          at: toEpochMs(settlement.at),
        }).changes;
      case "release":
        if (this.#release === null) return 1;
        return this.#release.run({
          ...key,
          runAt: settlement.runAt === null ? null : toEpochMs(settlement.runAt),
        }).changes;
      case "moveToGroup":
        return this.#required(this.#moveToGroup, "moveToGroup", "group").run({
          ...key,
          group: settlement.group,
        }).changes;
      case "moveToTable": {
        const move = this.#move(settlement.table);
        const copyAndRemove = (): number => {
          if (move.copy.run(key).changes === 0) return 0;
          return move.remove.run(key).changes;
        };
        // Inside a transactional handler's transaction the move is part of it.
        return this.#db.inTransaction ? copyAndRemove() : inTransaction(this.#db, "immediate", copyAndRemove);
      }
    }
  }

  /**
   * Applies one acknowledging settlement to several rows, each only where it still matches (in
   * the lease form: holds its own `token`, which may differ from row to row), in one IMMEDIATE
   * transaction and one commit. Returns, in order, whether each row changed (`false`: the row
   * holds another token or is gone, and is unchanged). Synchronous: nothing else of the process
   * runs between the rows. When a statement (or the commit) fails, the transaction rolls back,
   * so no row changed, and the error is thrown.
   */
  applyAckEach(
    held: readonly { readonly id: RowId; readonly token: { readonly expiry: Date } | undefined }[],
    settlement: AckSettlement,
  ): boolean[] {
    return inTransaction(this.#db, "immediate", () => this.ackEachWithin(held, settlement));
  }

  /**
   * {@link SettlementStatements.applyAckEach}'s statements without a transaction of their own:
   * for a caller that runs them inside its transaction (an ack sent with the next claim).
   */
  ackEachWithin(
    held: readonly { readonly id: RowId; readonly token: { readonly expiry: Date } | undefined }[],
    settlement: AckSettlement,
  ): boolean[] {
    const statement =
      settlement.kind === "delete"
        ? this.#delete
        : this.#required(this.#markProcessed, "markProcessed", "processedAt");
    // One parameter object for every row (better-sqlite3 reads it at each run): no allocation a row.
    const parameters: { id: RowId | null; token: number | null; at: number | null } = {
      id: null,
      token: null,
      at: settlement.kind === "markProcessed" ? toEpochMs(settlement.at) : null,
    };
    return held.map(({ id, token }) => {
      parameters.id = id;
      parameters.token = token === undefined ? null : toEpochMs(token.expiry);
      return statement.run(parameters).changes > 0;
    });
  }

  #required(statement: SqliteStatement | null, kind: string, role: string): SqliteStatement {
    if (statement === null) {
      throw new InvalidArgumentError(
        `Table "${this.#table.name}" (SQLite, ${this.#table.form} form): a ${kind} settlement needs a ${role} column, and the table describes none.`,
        { table: this.#table.name },
      );
    }
    return statement;
  }

  #move(target: string): MoveStatements {
    let move = this.#moves.get(target);
    if (move === undefined) {
      const table = this.#table;
      const copySql = moveCopySql(table, this.#columns, target, this.#tokenGuard);
      checkSchema(
        this.#db,
        table,
        { name: target, role: "dead-letter table" },
        table.allColumns.filter((column) => column !== table.columns.id),
        [{ name: "the moveToTable settlement (dead letter)", sql: copySql }],
      );
      move = { copy: this.#db.prepare(copySql), remove: this.#delete };
      this.#moves.set(target, move);
    }
    return move;
  }
}
