/**
 * Applies a {@link Settlement} to one row with a form's settlement statements.
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import type { Settlement } from "@rowclaim/core/driver";
import { matchedRows, type QueryableLike, run } from "./pool-like.js";
import { type SettlementStatements, transactionSql } from "./sql.js";

/** Where the settlement runs: inside an open transaction, or outside one (a move then opens its own, on a single connection). */
export type SettleMode = "inTransaction" | "autocommit";

/** Runs the settlement's statements; the rows the (main) statement matched, 0 when nothing changed. */
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
      const moved = async (): Promise<number> =>
        (await run(client, ...spread(move.insert))).affectedRows === 0
          ? 0
          : (await run(client, ...spread(move.delete))).affectedRows;
      if (mode === "inTransaction") return moved();
      await run(client, transactionSql.begin);
      try {
        const deleted = await moved();
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
