/**
 * The row lock form: `BEGIN; SELECT … FOR UPDATE SKIP LOCKED` on a connection of the claim's
 * own, held with its transaction open while the handlers run; each settlement is a statement
 * inside that transaction (counting the attempt where the row stays), then `COMMIT`.
 *
 * @module
 */
import type {
  ClaimedRow,
  ClaimRequest,
  RowLockBatch,
  RowLockClaimer,
  RowLockToken,
  Settlement,
  TableDefinition,
  TransactionWork,
} from "@rowclaim/core";
import { decodeClaimedRow } from "./claimed-row.js";
import { HeldConnection } from "./connection.js";
import { fifoGroupKey, tryFifoGuard } from "./fifo.js";
import { isClaimConflict, normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import type { Settlements } from "./settle.js";
import { beginSql, commitSql, rollbackSql, type Statement } from "./sql.js";
import { bodyRunning, rowLockTransaction } from "./transactional.js";

/** A row lock batch's token: the connection whose open transaction locked the batch's rows. */
export interface PostgresRowLockToken extends RowLockToken {
  readonly connection: HeldConnection;
}

/** What a row lock claimer is built from (statements built once, at open). */
export interface RowLockClaimerOptions {
  readonly pool: PoolLike;
  readonly table: TableDefinition;
  readonly group: string | null;
  readonly claim: Statement;
  readonly settlements: Settlements;
}

/** The row lock claimer of one subscription. */
export class PostgresRowLockClaimer implements RowLockClaimer<PostgresRowLockToken> {
  readonly form = "rowLock" as const;
  readonly #options: RowLockClaimerOptions;
  readonly #begin: string;
  readonly #fifoKey: string | null;

  constructor(options: RowLockClaimerOptions) {
    this.#options = options;
    this.#begin = beginSql(options.table.isolation);
    this.#fifoKey = options.table.fifo ? fifoGroupKey(options.table, options.group) : null;
  }

  async claim(request: ClaimRequest): Promise<RowLockBatch<PostgresRowLockToken> | null> {
    const { pool, table, group, claim } = this.#options;
    let connection: HeldConnection;
    try {
      connection = await HeldConnection.acquire(pool);
    } catch (error) {
      throw normalizeError(error, { table: table.name, form: "row lock", statement: "row lock claim" });
    }
    try {
      await connection.text(this.#begin);
      if (this.#fifoKey !== null && !(await tryFifoGuard(connection, this.#fifoKey))) {
        await this.#end(connection, rollbackSql);
        return null;
      }
      const result = await connection.run(claim, { now: request.now, group, limit: request.limit });
      if (result.rows.length === 0) {
        await this.#end(connection, commitSql);
        return null;
      }
      const rows = result.rows.map((raw) => decodeClaimedRow(table, raw, false));
      return { rows, token: { form: "rowLock", connection } };
    } catch (error) {
      if (!connection.released) {
        await connection.text(rollbackSql).catch(() => undefined);
        connection.release();
      }
      if (isClaimConflict(error)) return null;
      throw normalizeError(error, { table: table.name, form: "row lock", statement: "row lock claim" });
    }
  }

  async settle(token: PostgresRowLockToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    try {
      await this.#options.settlements.apply(token.connection, row.id, settlement);
    } catch (error) {
      throw normalizeError(error, {
        table: this.#options.table.name,
        form: "row lock",
        statement: `${settlement.kind} settlement`,
      });
    }
  }

  async commit(token: PostgresRowLockToken): Promise<void> {
    await this.#end(token.connection, commitSql);
  }

  async rollback(token: PostgresRowLockToken): Promise<void> {
    const { connection } = token;
    if (connection.released) return;
    // A transactional body still running on it: end the session, so its next statement fails.
    if (bodyRunning(connection))
      connection.markBroken(new Error("rowclaim: given up during a transactional body"));
    if (connection.broken !== undefined) {
      connection.release();
      return;
    }
    await this.#end(connection, rollbackSql);
  }

  /** Transactional handlers: the body and its settlement behind a savepoint (`src/transactional.ts`). */
  transaction(token: PostgresRowLockToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    const { settlements, table } = this.#options;
    return rowLockTransaction(token.connection, settlements, table, row.id, work);
  }

  async close(): Promise<void> {}

  /** Ends the transaction and releases the connection (destroying it if it broke). */
  async #end(connection: HeldConnection, sql: string): Promise<void> {
    try {
      await connection.text(sql);
    } catch (error) {
      connection.markBroken(error instanceof Error ? error : new Error(String(error)));
      throw normalizeError(error, {
        table: this.#options.table.name,
        form: "row lock",
        statement: sql === commitSql ? "commit" : "rollback",
      });
    } finally {
      connection.release();
    }
  }
}
