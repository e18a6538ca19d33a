/**
 * The row lock form: `BEGIN; SELECT … FOR UPDATE SKIP LOCKED` on a connection of the claim's
 * own (sent together, one round trip, on a pipelined client), held with its transaction open
 * while the handlers run; each settlement is a statement inside that transaction (counting the
 * attempt where the row stays; a batch's acks coalesced into one), then `COMMIT`.
 *
 * @module
 */
import {
  type AckSettlement,
  type ClaimedRow,
  type ClaimRequest,
  InvalidArgumentError,
  type RowLockBatch,
  type RowLockClaimer,
  type RowLockToken,
  type Settlement,
  type TableDefinition,
  type TransactionWork,
} from "@rowclaim/core";
import { decodeClaimedRow } from "./claimed-row.js";
import { HeldConnection } from "./connection.js";
import { fifoGroupKey, tryFifoGuard } from "./fifo.js";
import { isClaimConflict, normalizeError } from "./normalize-error.js";
import type { PoolLike, QueryResultLike } from "./pool-like.js";
import type { Settlements } from "./settle.js";
import {
  beginSql,
  type ClaimStatement,
  commitSql,
  rollbackSql,
  type SettleManyStatements,
  type Statement,
} from "./sql.js";
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
  readonly claim: ClaimStatement;
  readonly settlements: Settlements;
  /** The coalesced acknowledging settlements (`settleMany`). */
  readonly settleMany: SettleManyStatements;
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
      const values = { now: request.now, group, limit: request.limit };
      const stmt = claim.forLimit(request.limit);
      let result: QueryResultLike;
      if (this.#fifoKey === null && connection.pipelined) {
        // BEGIN and the claim sent together: one round trip. A failed BEGIN fails the claim too
        // (its answer comes after BEGIN's), and the catch below rolls back either way.
        [, result] = await Promise.all(
          connection.together(() => [connection.text(this.#begin), connection.run(stmt, values)] as const),
        );
      } else {
        await connection.text(this.#begin);
        if (this.#fifoKey !== null && !(await tryFifoGuard(connection, this.#fifoKey))) {
          await this.#end(connection, rollbackSql);
          return null;
        }
        result = await connection.run(stmt, values);
      }
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

  /**
   * Coalesced settlements: one statement inside the batch's open transaction settles every row
   * of `rows` as {@link PostgresRowLockClaimer.settle} would settle each (`delete` removes them,
   * `markProcessed` writes the time and counts the attempt). Nothing is seen by other sessions
   * before {@link PostgresRowLockClaimer.commit}, and a rollback undoes it with the batch.
   */
  async settleMany(
    token: PostgresRowLockToken,
    rows: readonly ClaimedRow[],
    settlement: AckSettlement,
  ): Promise<void> {
    const { table } = this.#options;
    if (rows.length === 0) return;
    const stmt = this.#settleManyStatement(settlement);
    try {
      await token.connection.run(stmt, this.#settleManyValues(rows, settlement));
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        form: "row lock",
        statement: `coalesced ${settlement.kind} settlement`,
      });
    }
  }

  /**
   * The batch's acks and its `COMMIT` in one round trip, for a broker that ends a batch with
   * its coalesced acks (not yet part of core's `RowLockClaimer`): on a pipelined client the ack
   * statement (as {@link PostgresRowLockClaimer.settleMany}, any number of rows) and `COMMIT` are
   * sent together. Should the ack statement fail, the server answers the `COMMIT` with a
   * rollback: nothing is committed, the connection goes back to the pool, and the ack's error
   * is thrown (a later {@link PostgresRowLockClaimer.rollback} does nothing). Without pipelining
   * it runs the two one after the other.
   */
  async settleAndCommit(
    token: PostgresRowLockToken,
    rows: readonly ClaimedRow[],
    settlement: AckSettlement,
  ): Promise<void> {
    const { connection } = token;
    if (rows.length === 0 || !connection.pipelined) {
      try {
        await this.settleMany(token, rows, settlement);
      } catch (error) {
        await this.rollback(token).catch(() => undefined);
        throw error;
      }
      await this.commit(token);
      return;
    }
    const stmt = this.#settleManyStatement(settlement);
    const [settled, committed] = await Promise.allSettled(
      connection.together(
        () =>
          [
            connection.run(stmt, this.#settleManyValues(rows, settlement)),
            connection.text(commitSql),
          ] as const,
      ),
    );
    if (committed.status === "rejected")
      connection.markBroken(
        committed.reason instanceof Error ? committed.reason : new Error(String(committed.reason)),
      );
    connection.release();
    if (settled.status === "rejected") {
      throw normalizeError(settled.reason, {
        table: this.#options.table.name,
        form: "row lock",
        statement: `coalesced ${settlement.kind} settlement`,
      });
    }
    if (committed.status === "rejected") {
      throw normalizeError(committed.reason, {
        table: this.#options.table.name,
        form: "row lock",
        statement: "commit",
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

  /** The coalesced statement of an ack settlement. */
  #settleManyStatement(settlement: AckSettlement): Statement {
    const { table, settleMany } = this.#options;
    const stmt = settlement.kind === "delete" ? settleMany.delete : settleMany.markProcessed;
    if (stmt === null) {
      throw new InvalidArgumentError(
        `Table "${table.name}" (row lock form): a markProcessed settlement needs a processedAt column; the table describes none.`,
        { table: table.name },
      );
    }
    return stmt;
  }

  /** The coalesced statement's values: the rows' ids (and the time, for markProcessed). */
  #settleManyValues(rows: readonly ClaimedRow[], settlement: AckSettlement): Record<string, unknown> {
    return {
      ids: rows.map((row) => row.id),
      ...(settlement.kind === "markProcessed" ? { at: settlement.at } : {}),
    };
  }

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
