/**
 * Applies a {@link Settlement} to one row with a form's settlement statements, on a connection
 * (or, in the lease form, the pool), and reports how many rows it matched, so that the lease
 * form can tell a lost lease (0) from a settled one.
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import type { Settlement } from "@rowclaim/core/driver";
import { matchedRows, type QueryableLike, run } from "./pool-like.js";
import { type SettlementStatements, transactionSql } from "./sql.js";

/**
 * Where the settlement runs: `"inTransaction"` (row lock form: the claim's transaction is open on
 * `client`) or `"autocommit"` (a connection or pool outside any transaction; a move to another
 * table then opens its own transaction on `client`, which must be a single connection).
 */
export type SettleMode = "inTransaction" | "autocommit";

/**
 * Runs the settlement's statements. Returns the rows the (main) statement matched: 1 when the
 * row held what the statement required, 0 when it did not (nothing was changed then).
 */
export async function applySettlement(
  client: QueryableLike,
  statements: SettlementStatements,
  settlement: Settlement,
  id: RowId,
  token: Date | undefined,
  mode: SettleMode,
): Promise<number> {
  switch (settlement.kind) {
    case "delete":
      return (await run(client, ...spread(statements.delete(id, token)))).affectedRows;
    case "markProcessed":
      return runUpdate(client, statements.update("markProcessed", settlement.at, id, token));
    case "release":
      return settlement.runAt === null
        ? runUpdate(client, statements.update("release", undefined, id, token))
        : runUpdate(client, statements.update("releaseAt", settlement.runAt, id, token));
    case "moveToGroup":
      return runUpdate(client, statements.update("moveToGroup", settlement.group, id, token));
    case "moveToTable": {
      const move = statements.moveToTable(settlement.table, id, token);
      if (mode === "inTransaction") {
        const inserted = (await run(client, ...spread(move.insert))).affectedRows;
        if (inserted === 0) return 0;
        return (await run(client, ...spread(move.delete))).affectedRows;
      }
      await run(client, transactionSql.begin);
      try {
        const inserted = (await run(client, ...spread(move.insert))).affectedRows;
        const deleted = inserted === 0 ? 0 : (await run(client, ...spread(move.delete))).affectedRows;
        await run(client, deleted === 0 ? transactionSql.rollback : transactionSql.commit);
        return deleted;
      } catch (error) {
        await run(client, transactionSql.rollback).catch(() => undefined);
        throw error;
      }
    }
  }
}

async function runUpdate(
  client: QueryableLike,
  bound: { sql: string; values: unknown[] } | null,
): Promise<number> {
  if (bound === null) return 1;
  return matchedRows(await run(client, bound.sql, bound.values));
}

function spread(bound: { sql: string; values: unknown[] }): [string, unknown[]] {
  return [bound.sql, bound.values];
}
