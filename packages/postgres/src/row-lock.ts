/**
 * The row lock form: `BEGIN; SELECT … FOR UPDATE SKIP LOCKED` (one round trip when pipelined),
 * the transaction held open while the handlers run, each settlement a statement inside it.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type {
  AckSettlement,
  Acks,
  BatchEnd,
  ClaimedRow,
  ClaimRequest,
  RowLockBatch,
  RowLockClaimer,
  RowLockToken,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { runRowLockTransaction } from "@rowclaim/core/driver";
import { ArrayParam } from "./array-param.js";
import { claimedRowOf } from "./claimed-row.js";
import { HeldConnection, type StatementRun } from "./connection.js";
import { fifoGroupKey } from "./fifo.js";
import { isClaimConflict, normalizeError } from "./normalize-error.js";
import type { PoolLike, QueryResultLike } from "./pool-like.js";
import { noProcessedAt, type Settlements, settlementValues } from "./settle.js";
import {
  beginSql,
  type ClaimStatement,
  commitSql,
  fifoTryGuard,
  rollbackSql,
  type SettleManyStatements,
} from "./sql.js";
import { dialectFor, releasedIfUnusable, sessionOf } from "./transactional.js";

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
  /** The coalesced acknowledging settlements (a batch's acks). */
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
    let connection: HeldConnection;
    try {
      connection = await HeldConnection.acquire(this.#options.pool);
    } catch (error) {
      throw this.#failed(error, "row lock claim");
    }
    try {
      const { stmt, values } = this.#claimStatement(request);
      let result: QueryResultLike;
      if (this.#fifoKey === null && connection.pipelined) {
        // BEGIN and the claim sent together: one round trip. A failed BEGIN fails the claim too
        // (its answer comes after BEGIN's), and the catch below rolls back either way.
        [, result] = await Promise.all(
          connection.together(() => [connection.text(this.#begin), connection.run(stmt, values)] as const),
        );
      } else {
        await connection.text(this.#begin);
        const guard =
          this.#fifoKey === null ? undefined : await connection.run(fifoTryGuard, { key: this.#fifoKey });
        if (guard !== undefined && guard.rows[0]?.locked !== true) {
          await this.#end(connection, rollbackSql);
          return null;
        }
        result = await connection.run(stmt, values);
      }
      return await this.#claimed(connection, result);
    } catch (error) {
      return this.#claimFailed(connection, error);
    }
  }

  /**
   * A batch's end and the next claim (DRIVERS.md, "Row lock"): acks, `COMMIT`, `BEGIN` and the
   * claim in one write where pipelined; a failed `COMMIT` destroys the connection.
   */
  async endBatchWithClaim(
    token: PostgresRowLockToken,
    acks: Acks<ClaimedRow>,
    request: ClaimRequest,
  ): Promise<BatchEnd<PostgresRowLockToken>> {
    const { connection } = token;
    const { rows, settlement } = acks;
    const ack = this.#ackStatement(rows, settlement);
    if (this.#fifoKey !== null || !connection.pipelined || connection.released || ack === null) {
      // One after the other (also when no statement can ack these rows: `endBatch` says why).
      const ended = await this.endBatch(token, acks).then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
      const claimed = await this.claim(request).catch((error: unknown) => ({ error }));
      return { ended, claimed };
    }
    const { stmt, values } = this.#claimStatement(request);
    const [acked, committed, begun, selected] = await Promise.allSettled(
      connection.together(
        () =>
          [
            rows.length === 0 ? Promise.resolve(undefined) : connection.run(ack.stmt, ack.values),
            connection.text(commitSql),
            connection.text(this.#begin),
            connection.run(stmt, values),
          ] as const,
      ),
    );
    if (committed.status === "rejected") {
      connection.markBroken(committed.reason);
      connection.release();
      const error =
        acked.status === "rejected"
          ? this.#ackError(acked.reason, settlement)
          : this.#failed(committed.reason, "row lock commit");
      return { ended: { error }, claimed: { error } };
    }
    const ended =
      acked.status === "rejected" ? { error: this.#ackError(acked.reason, settlement) } : undefined;
    const next = connection.passOn();
    let claimed: BatchEnd<PostgresRowLockToken>["claimed"];
    try {
      if (begun.status === "rejected") throw begun.reason;
      if (selected.status === "rejected") throw selected.reason;
      claimed = await this.#claimed(next, selected.value);
    } catch (error) {
      claimed = await this.#claimFailed(next, error).catch((failure: unknown) => ({ error: failure }));
    }
    return { ended, claimed };
  }

  /** The batch a claim on `connection` (its transaction open) read, or `null` (ended) when it read no row. */
  async #claimed(
    connection: HeldConnection,
    result: QueryResultLike,
  ): Promise<RowLockBatch<PostgresRowLockToken> | null> {
    if (result.rows.length === 0) {
      await this.#end(connection, commitSql);
      return null;
    }
    const { table } = this.#options;
    const rows = new Array<ClaimedRow>(result.rows.length);
    for (let index = 0; index < rows.length; index += 1) {
      rows[index] = claimedRowOf(table, result.rows[index] as Record<string, unknown>, false);
    }
    return { rows, token: { form: "rowLock", connection } };
  }

  /**
   * A claim on `connection` failed: rolls its transaction back and lets the connection go;
   * `null` for a claim conflict (nothing claimed), else throws the error normalized.
   */
  async #claimFailed(connection: HeldConnection, error: unknown): Promise<null> {
    if (!connection.released) {
      await connection.text(rollbackSql).catch(() => undefined);
      connection.release();
    }
    if (isClaimConflict(error)) return null;
    throw this.#failed(error, "row lock claim");
  }

  async settle(token: PostgresRowLockToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    try {
      await this.#options.settlements.apply(token.connection, row.id, settlement);
    } catch (error) {
      throw this.#failed(error, `row lock ${settlement.kind} settlement`);
    }
  }

  /** A batch's end: its acks as one statement, then `COMMIT`, together where pipelined (DRIVERS.md, "Row lock"). */
  async endBatch(token: PostgresRowLockToken, acks?: Acks<ClaimedRow>): Promise<void> {
    const { connection } = token;
    if (acks === undefined || acks.rows.length === 0) {
      await this.#end(connection, commitSql);
      return;
    }
    const { rows, settlement } = acks;
    const ack = this.#ackStatement(rows, settlement);
    if (!connection.pipelined || ack === null) {
      try {
        if (ack === null) throw noProcessedAt(this.#options.table);
        await connection.run(ack.stmt, ack.values).catch((error: unknown) => {
          throw this.#ackError(error, settlement);
        });
      } catch (error) {
        await this.release(token).catch(() => undefined);
        throw error;
      }
      await this.#end(connection, commitSql);
      return;
    }
    const { stmt, values } = ack;
    const [settled, committed] = await Promise.allSettled(
      connection.together(() => [connection.run(stmt, values), connection.text(commitSql)] as const),
    );
    if (committed.status === "rejected") connection.markBroken(committed.reason);
    connection.release();
    if (settled.status === "rejected") throw this.#ackError(settled.reason, settlement);
    if (committed.status === "rejected") throw this.#failed(committed.reason, "row lock commit");
  }

  async release(token: PostgresRowLockToken): Promise<void> {
    const { connection } = token;
    if (releasedIfUnusable(connection)) return;
    await this.#end(connection, rollbackSql);
  }

  /** Transactional handlers: the body and its settlement behind a savepoint (`src/transactional.ts`). */
  transaction(token: PostgresRowLockToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    const { settlements, table } = this.#options;
    return runRowLockTransaction(sessionOf(token.connection), dialectFor(settlements, table, row.id), work);
  }

  async close(): Promise<void> {}

  /**
   * The statement that acks `rows` and its values, `null` where the table cannot take it. One row
   * goes as the single settlement, which PostgreSQL plans once; more as `id = ANY($ids)`, planned each run.
   */
  #ackStatement(rows: readonly ClaimedRow[], settlement: AckSettlement): StatementRun | null {
    const { settleMany, settlements } = this.#options;
    const one = rows.length === 1 ? rows[0] : undefined;
    const stmt = one === undefined ? settleMany[settlement.kind] : settlements.statements[settlement.kind];
    if (stmt === null) return null;
    const ids = one === undefined ? { ids: new ArrayParam(rows.map((row) => row.id)) } : { id: one.id };
    return { stmt, values: { ...ids, ...settlementValues(settlement) } };
  }

  /** An ack statement's error, normalized. */
  #ackError(error: unknown, settlement: AckSettlement): unknown {
    return this.#failed(error, `row lock coalesced ${settlement.kind} settlement`);
  }

  /** `error` normalized, naming the table and `operation`. */
  #failed(error: unknown, operation: string): unknown {
    return normalizeError(error, { table: this.#options.table.name, operation });
  }

  /** A claim's statement (by its limit) and values. */
  #claimStatement(request: ClaimRequest): StatementRun {
    const { group, claim } = this.#options;
    return { stmt: claim.forLimit(request.limit), values: { now: request.now, group, limit: request.limit } };
  }

  /** Ends the transaction and releases the connection (destroying it if it broke). */
  async #end(connection: HeldConnection, sql: string): Promise<void> {
    try {
      await connection.text(sql);
    } catch (error) {
      connection.markBroken(error);
      throw this.#failed(error, sql === commitSql ? "row lock commit" : "row lock rollback");
    } finally {
      connection.release();
    }
  }
}
