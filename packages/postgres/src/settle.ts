/**
 * Applies a core `Settlement` by running the statement {@link settleStatements} built for it.
 * The move to another table is built on first use for each target and kept.
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import type { Settlement } from "@rowclaim/core/driver";
import { execute } from "./connection.js";
import type { QueryableLike } from "./pool-like.js";
import type { SettleStatements, Statement } from "./sql.js";

/** The settlement statements of one claimer, with the moves it built so far. */
export class Settlements {
  readonly statements: SettleStatements;
  readonly #moves = new Map<string, Statement>();

  constructor(statements: SettleStatements) {
    this.statements = statements;
  }

  /** Every statement known now, for the startup check. */
  known(deadLetterTable: string | undefined): Statement[] {
    const { delete: del, markProcessed, release, moveToGroup } = this.statements;
    const all = [del, markProcessed, release, moveToGroup].filter((stmt): stmt is Statement => stmt !== null);
    if (deadLetterTable !== undefined) all.push(this.moveTo(deadLetterTable));
    return all;
  }

  /** The move to `target`, built once. */
  moveTo(target: string): Statement {
    let stmt = this.#moves.get(target);
    if (stmt === undefined) {
      stmt = this.statements.moveToTable(target);
      this.#moves.set(target, stmt);
    }
    return stmt;
  }

  /**
   * Runs the settlement of row `id` on `queryable`. `token` is the lease expiry the row must
   * still hold (lease form). Returns the number of rows changed, or `null` when the settlement
   * needs no statement (a release on a row lock table without attempt or runAt columns).
   */
  async apply(
    queryable: QueryableLike,
    id: RowId,
    settlement: Settlement,
    token?: Date,
  ): Promise<number | null> {
    let stmt: Statement | null;
    const values: Record<string, unknown> = { id, token };
    switch (settlement.kind) {
      case "delete":
        stmt = this.statements.delete;
        break;
      case "markProcessed":
        stmt = this.statements.markProcessed;
        values.at = settlement.at;
        break;
      case "release":
        stmt = this.statements.release;
        values.runAt = settlement.runAt;
        break;
      case "moveToGroup":
        stmt = this.statements.moveToGroup;
        values.group = settlement.group;
        break;
      case "moveToTable":
        stmt = this.moveTo(settlement.table);
        break;
    }
    if (stmt === null) return null;
    const result = await execute(queryable, stmt, values);
    return result.rowCount ?? 0;
  }
}
