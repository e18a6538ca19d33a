/**
 * Applies a core `Settlement` by running the statement {@link settleStatements} built for it.
 * The move to another table is built on first use for each target and kept.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import { formLabels, type Settlement } from "@rowclaim/core/driver";
import { execute } from "./connection.js";
import type { QueryableLike } from "./pool-like.js";
import type { SettleStatements, Statement } from "./sql.js";

/** The statements that exist (a table without processedAt has no markProcessed statement). */
export function present(...statements: (Statement | null)[]): Statement[] {
  return statements.filter((stmt): stmt is Statement => stmt !== null);
}

/** A settlement's own parameter values (`$at`, `$runAt` or `$group`). */
export function settlementValues(settlement: Settlement): Record<string, unknown> {
  switch (settlement.kind) {
    case "markProcessed":
      return { at: settlement.at };
    case "release":
      return { runAt: settlement.runAt };
    case "moveToGroup":
      return { group: settlement.group };
    default:
      return {};
  }
}

/** The refusal of a markProcessed ack on a table without a processedAt column. */
export function noProcessedAt(table: TableDefinition): InvalidArgumentError {
  return new InvalidArgumentError(
    `Table "${table.name}" (${formLabels[table.form]} form): a markProcessed settlement needs a processedAt column; the table describes none.`,
    { table: table.name },
  );
}

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
    const all = present(del, markProcessed, release, moveToGroup);
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
   * Runs the settlement of row `id` on `queryable`; `token` is the lease expiry the row must hold.
   * Returns the rows changed, or `null` when the settlement needs no statement.
   */
  async apply(
    queryable: QueryableLike,
    id: RowId,
    settlement: Settlement,
    token?: Date,
  ): Promise<number | null> {
    const stmt =
      settlement.kind === "moveToTable" ? this.moveTo(settlement.table) : this.statements[settlement.kind];
    if (stmt === null) return null;
    const result = await execute(queryable, stmt, { id, token, ...settlementValues(settlement) });
    return result.rowCount ?? 0;
  }
}
