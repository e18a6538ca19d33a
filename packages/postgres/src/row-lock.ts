/**
 * The row lock form: `BEGIN; SELECT … FOR UPDATE SKIP LOCKED` on a connection of the claim's
 * own (sent together, one round trip, on a pipelined client), held with its transaction open
 * while the handlers run; each settlement is a statement inside that transaction (counting the
 * attempt where the row stays; a batch's acks coalesced into one), then `COMMIT`.
 *
 * @module
 */
import { InvalidArgumentError, type TableDefinition } from "@rowclaim/core";
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
import { ArrayParam } from "./array-param.js";
import { claimedRowOf } from "./claimed-row.js";
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
    const { pool, table } = this.#options;
    let connection: HeldConnection;
    try {
      connection = await HeldConnection.acquire(pool);
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "row lock claim" });
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
        if (this.#fifoKey !== null && !(await tryFifoGuard(connection, this.#fifoKey))) {
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
   * A batch's end and the next claim on its connection (see core's `RowLockClaimer`): on a
   * pipelined client the acks, `COMMIT`, `BEGIN` and the claim go in one write, and the server
   * answers them in order. An ack that fails leaves the transaction aborted, which the `COMMIT`
   * then ends with a rollback (nothing committed); the claim's `BEGIN` starts afresh after it,
   * so the claim does not depend on the batch's fate. A `COMMIT` that fails ends the session
   * (the connection is destroyed, and with it the claim's transaction, if it began): the claim
   * reports that error and the broker claims again. Without pipelining (or on a FIFO table,
   * whose claim takes its guard first), the batch ends as `endBatch` ends it and the claim
   * runs as `claim` does.
   */
  async endBatchWithClaim(
    token: PostgresRowLockToken,
    acks: Acks<ClaimedRow>,
    request: ClaimRequest,
  ): Promise<BatchEnd<PostgresRowLockToken>> {
    const { connection } = token;
    const { rows, settlement } = acks;
    const ack = this.#ackStatementOrNull(rows, settlement);
    if (this.#fifoKey !== null || !connection.pipelined || connection.released || ack === null) {
      // One after the other (also when no statement can ack these rows: `endBatch` then rolls
      // the batch back and says why).
      const ended = await this.endBatch(token, acks).then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
      const claimed = await this.claim(request).catch((error: unknown) => ({ error }));
      return { ended, claimed };
    }
    const { table } = this.#options;
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
      const reason =
        committed.reason instanceof Error ? committed.reason : new Error(String(committed.reason));
      connection.markBroken(reason);
      connection.release();
      const error =
        acked.status === "rejected"
          ? this.#ackError(acked.reason, settlement)
          : normalizeError(committed.reason, { table: table.name, operation: "row lock commit" });
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
    const rows = result.rows.map((raw) => claimedRowOf(table, raw, false));
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
    throw normalizeError(error, {
      table: this.#options.table.name,
      operation: "row lock claim",
    });
  }

  async settle(token: PostgresRowLockToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    try {
      await this.#options.settlements.apply(token.connection, row.id, settlement);
    } catch (error) {
      throw normalizeError(error, {
        table: this.#options.table.name,
        operation: `row lock ${settlement.kind} settlement`,
      });
    }
  }

  /**
   * A batch's end: its acks as one statement inside the transaction (as {@link
   * PostgresRowLockClaimer.settle} would settle each row: `delete` removes them, `markProcessed`
   * writes the time and counts the attempt), then `COMMIT`, sent together on a pipelined client
   * (one round trip). Should the ack statement fail, the server answers the `COMMIT` with a
   * rollback: nothing is committed, the connection goes back to the pool, and the ack's error is
   * thrown. Without pipelining the two run one after the other.
   */
  async endBatch(token: PostgresRowLockToken, acks?: Acks<ClaimedRow>): Promise<void> {
    const { connection } = token;
    if (acks === undefined || acks.rows.length === 0) {
      await this.#end(connection, commitSql);
      return;
    }
    const { rows, settlement } = acks;
    const ack = this.#ackStatementOrNull(rows, settlement);
    if (!connection.pipelined || ack === null) {
      try {
        // No statement can ack these rows: `#ackStatement` throws why.
        const { stmt, values } = ack ?? this.#ackStatement(rows, settlement);
        await connection.run(stmt, values).catch((error: unknown) => {
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
    if (committed.status === "rejected")
      connection.markBroken(
        committed.reason instanceof Error ? committed.reason : new Error(String(committed.reason)),
      );
    connection.release();
    if (settled.status === "rejected") throw this.#ackError(settled.reason, settlement);
    if (committed.status === "rejected") {
      throw normalizeError(committed.reason, {
        table: this.#options.table.name,
        operation: "row lock commit",
      });
    }
  }

  async release(token: PostgresRowLockToken): Promise<void> {
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

  /**
   * The statement that acks `rows`, and its values. One row goes as the single settlement
   * (`id = $id`): PostgreSQL keeps one generic plan for it after a few runs. More go as the
   * coalesced statement (`id = ANY($ids)`), which PostgreSQL plans anew on every run (the
   * generic plan's estimate of an array of unknown length costs more than a fresh plan for the
   * given one), about 40 µs of server CPU a statement on the benchmark machine: worth it for a
   * batch, not for the single row of the default batch of one.
   */
  #ackStatement(
    rows: readonly ClaimedRow[],
    settlement: AckSettlement,
  ): { readonly stmt: Statement; readonly values: Record<string, unknown> } {
    const { table, settleMany, settlements } = this.#options;
    const one = rows.length === 1 ? rows[0] : undefined;
    const single =
      settlement.kind === "delete" ? settlements.statements.delete : settlements.statements.markProcessed;
    const many = settlement.kind === "delete" ? settleMany.delete : settleMany.markProcessed;
    const stmt = one === undefined ? many : single;
    if (stmt === null) {
      throw new InvalidArgumentError(
        `Table "${table.name}" (row lock form): a markProcessed settlement needs a processedAt column; the table describes none.`,
        { table: table.name },
      );
    }
    const at = settlement.kind === "markProcessed" ? { at: settlement.at } : {};
    return {
      stmt,
      values:
        one === undefined ? { ids: new ArrayParam(rows.map((row) => row.id)), ...at } : { id: one.id, ...at },
    };
  }

  /** {@link PostgresRowLockClaimer.#ackStatement}, or `null` where the table cannot take the ack (its caller then reports why). */
  #ackStatementOrNull(
    rows: readonly ClaimedRow[],
    settlement: AckSettlement,
  ): { readonly stmt: Statement; readonly values: Record<string, unknown> } | null {
    try {
      return this.#ackStatement(rows, settlement);
    } catch {
      return null;
    }
  }

  /** An ack statement's error, normalized. */
  #ackError(error: unknown, settlement: AckSettlement): unknown {
    return normalizeError(error, {
      table: this.#options.table.name,
      operation: `row lock coalesced ${settlement.kind} settlement`,
    });
  }

  /** A claim's statement (by its limit) and values. */
  #claimStatement(request: ClaimRequest): {
    readonly stmt: Statement;
    readonly values: Record<string, unknown>;
  } {
    const { group, claim } = this.#options;
    return {
      stmt: claim.forLimit(request.limit),
      values: { now: request.now, group, limit: request.limit },
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
        operation: sql === commitSql ? "row lock commit" : "row lock rollback",
      });
    } finally {
      connection.release();
    }
  }
}
