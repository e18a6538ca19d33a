/**
 * Applying settlements on SQLite, shared by the lease form (guarded by the delivery's token) and
 * the advisory lock form (by id alone). Statements are prepared once per claimer.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import type { AckSettlement, Settlement } from "@rowclaim/core/driver";
import type { SqliteDatabase, SqliteStatement } from "./database.js";
import { checkSchema, type NamedStatement } from "./schema-check.js";
import { moveCopySql, type QuotedColumns, settlementSql } from "./sql.js";
import { inTransaction } from "./transaction.js";

/** Rows an ack settles: their ids and, in the lease form, their tokens. */
type AckedRows = readonly { readonly id: RowId; readonly token: { readonly expiry: Date } | undefined }[];

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
  readonly #moves = new Map<string, SqliteStatement>();

  /** The SQL of the settlements, by name, for the schema check. */
  static named(columns: QuotedColumns, tokenGuard: boolean): NamedStatement[] {
    const sql = settlementSql(columns, tokenGuard);
    const named = [
      { name: "the delete settlement (ack)", sql: sql.delete },
      { name: "the markProcessed settlement (ack)", sql: sql.markProcessed },
      { name: "the release settlement (retry)", sql: sql.release },
      { name: "the moveToGroup settlement (dead letter)", sql: sql.moveToGroup },
    ];
    return named.filter((statement): statement is NamedStatement => statement.sql !== null);
  }

  /** Prepares every settlement statement, and the move to the table's dead-letter table (checking its columns). */
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

  /** Applies `settlement` to row `id` (holding `token`, in the lease form); returns how many rows changed (0: none matched). */
  apply(id: RowId, token: Date | undefined, settlement: Settlement): number {
    const key = { id, token: token === undefined ? null : token.getTime() };
    switch (settlement.kind) {
      case "delete":
        return this.#delete.run(key).changes;
      case "markProcessed":
        return this.#required(this.#markProcessed, "markProcessed", "processedAt").run({
          ...key,
          at: settlement.at.getTime(),
        }).changes;
      case "release":
        if (this.#release === null) return 1;
        return this.#release.run({
          ...key,
          runAt: settlement.runAt === null ? null : settlement.runAt.getTime(),
        }).changes;
      case "moveToGroup":
        return this.#required(this.#moveToGroup, "moveToGroup", "group").run({
          ...key,
          group: settlement.group,
        }).changes;
      case "moveToTable": {
        const copy = this.#move(settlement.table);
        const copyAndRemove = (): number => (copy.run(key).changes === 0 ? 0 : this.#delete.run(key).changes);
        // Inside a transactional handler's transaction the move is part of it.
        return this.#db.inTransaction ? copyAndRemove() : inTransaction(this.#db, "immediate", copyAndRemove);
      }
    }
  }

  /** {@link SettlementStatements.ackEachWithin} in one IMMEDIATE transaction, rolled back when a statement fails. */
  applyAckEach(held: AckedRows, settlement: AckSettlement): boolean[] {
    return inTransaction(this.#db, "immediate", () => this.ackEachWithin(held, settlement));
  }

  /** Applies an ack to each row while it still matches (its own token, in the lease form); returns, in order, whether it did. */
  ackEachWithin(held: AckedRows, settlement: AckSettlement): boolean[] {
    const statement =
      settlement.kind === "delete"
        ? this.#delete
        : this.#required(this.#markProcessed, "markProcessed", "processedAt");
    // One parameter object for every row (better-sqlite3 reads it at each run): no allocation a row.
    const parameters: { id: RowId | null; token: number | null; at: number | null } = {
      id: null,
      token: null,
      at: settlement.kind === "markProcessed" ? settlement.at.getTime() : null,
    };
    return held.map(({ id, token }) => {
      parameters.id = id;
      parameters.token = token === undefined ? null : token.expiry.getTime();
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

  #move(target: string): SqliteStatement {
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
      move = this.#db.prepare(copySql);
      this.#moves.set(target, move);
    }
    return move;
  }
}
