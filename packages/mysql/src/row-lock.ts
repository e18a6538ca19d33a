/**
 * The row lock form on MySQL/MariaDB (DRIVERS.md, "Row lock form"): the claim's transaction, at
 * READ COMMITTED unless the table names a level, stays open on its connection while handlers run.
 *
 * @module
 */
import {
  type AckSettlement,
  type Acks,
  type BatchEnd,
  bodyRunning,
  type ClaimedRow,
  type ClaimRequest,
  type RowLockBatch,
  type RowLockClaimer,
  type RowLockToken,
  type Settlement,
  type TransactionWork,
} from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import type { ClaimerContext } from "./claimer-context.js";
import { fifoGuardRelease, rowLockFifoHead, takeFifoGuard } from "./fifo.js";
import { classifyError, normalizeError } from "./normalize-error.js";
import { type ConnectionLike, letGo, run, selectRows } from "./pool-like.js";
import { withDeadlockRetry } from "./retry.js";
import { applySettlement } from "./settle.js";
import { chainMarkSql, compoundSql, type SettlementStatements, transactionSql } from "./sql.js";
import { beginAt, commitAndRelease, rollbackAndRelease, type SessionLockRelease } from "./transaction.js";
import { rowLockTransaction } from "./transactional.js";

/** Marks of compound carries (`#carryInOneStatement`), unique in the process. */
let chainMarks = 0;

const failed = (error: unknown): { readonly error: unknown } => ({ error });

/** The row lock token: the connection whose open transaction locked the batch's rows. */
export interface MysqlRowLockToken extends RowLockToken {
  readonly connection: ConnectionLike;
  /** FIFO tables: gives the group's guard back once the transaction ended. */
  readonly guard?: SessionLockRelease;
}

/** The row lock claimer of one subscription. */
export class MysqlRowLockClaimer implements RowLockClaimer<MysqlRowLockToken> {
  readonly form = "rowLock" as const;
  readonly #context: ClaimerContext;
  readonly #settlements: SettlementStatements;

  constructor(context: ClaimerContext) {
    this.#context = context;
    this.#settlements = context.statements.settlements({ countAttempt: true, tokenGuard: false });
  }

  claim(request: ClaimRequest): Promise<RowLockBatch<MysqlRowLockToken> | null> {
    return withDeadlockRetry(() => this.#claimOnce(request));
  }

  async #claimOnce({ limit, now }: ClaimRequest): Promise<RowLockBatch<MysqlRowLockToken> | null> {
    const { pool, table, statements } = this.#context;
    const connection = await pool.getConnection();
    let guard: SessionLockRelease | undefined;
    try {
      await beginAt(connection, table.isolation ?? "read committed");
      let rows: unknown[][];
      if (table.fifo) {
        if (!(await takeFifoGuard(connection, statements, 0))) {
          await commitAndRelease(connection);
          return null;
        }
        guard = fifoGuardRelease(statements);
        const head = await rowLockFifoHead(connection, statements, now);
        const read = head === null ? undefined : statements.readRows([head]);
        rows = read === undefined ? [] : await selectRows(connection, read.sql, read.values);
      } else {
        const select = statements.rowLockClaim(now, limit);
        rows = await selectRows(connection, select.sql, select.values);
      }
      if (rows.length === 0) {
        await commitAndRelease(connection, guard);
        return null;
      }
      return {
        rows: rows.map((values) => claimedRowOf(table, values, false)),
        token: guard === undefined ? { form: "rowLock", connection } : { form: "rowLock", connection, guard },
      };
    } catch (error) {
      await rollbackAndRelease(connection, error, guard).catch(() => undefined);
      throw normalizeError(error, { table: table.name, operation: "row lock claim" });
    }
  }

  async settle(token: MysqlRowLockToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    try {
      await applySettlement(
        token.connection,
        this.#settlements,
        settlement,
        row.id,
        undefined,
        "inTransaction",
      );
    } catch (error) {
      throw normalizeError(error, {
        table: this.#context.table.name,
        operation: `row lock ${settlement.kind}`,
      });
    }
  }

  /** A batch's end: its acks as one statement inside the transaction (`ackMany`), then `COMMIT`; a failed ack rolls back. */
  async endBatch(token: MysqlRowLockToken, acks?: Acks<ClaimedRow>): Promise<void> {
    if (acks !== undefined) {
      try {
        await this.#ack(token, acks);
      } catch (error) {
        await this.release(token).catch(() => undefined);
        throw error;
      }
    }
    await commitAndRelease(token.connection, token.guard);
  }

  /**
   * A batch's end and the next claim on its connection (DRIVERS.md, "Row lock"): the acks, `COMMIT
   * AND CHAIN` and the claim, three round trips where ending and claiming anew take five; on
   * MariaDB one compound statement (`#carryInOneStatement`). FIFO tables end, then claim anew.
   */
  async endBatchWithClaim(
    token: MysqlRowLockToken,
    acks: Acks<ClaimedRow>,
    request: ClaimRequest,
  ): Promise<BatchEnd<MysqlRowLockToken>> {
    const { table, statements } = this.#context;
    const { connection } = token;
    if (table.fifo || token.guard !== undefined) {
      const ended = await this.endBatch(token, acks).then(() => undefined, failed);
      return { ended, claimed: await this.claim(request).catch(failed) };
    }
    if (this.#context.family === "mariadb" && acks.rows.length > 0) {
      return this.#carryInOneStatement(token, acks, request);
    }
    try {
      await this.#ack(token, acks);
    } catch (error) {
      await this.release(token).catch(() => undefined);
      return { ended: { error }, claimed: await this.claim(request).catch(failed) };
    }
    try {
      await run(connection, transactionSql.commitAndChain);
    } catch (error) {
      letGo(connection, true);
      const normalized = normalizeError(error, { table: table.name, operation: "row lock commit" });
      return { ended: { error: normalized }, claimed: { error: normalized } };
    }
    const select = statements.rowLockClaim(request.now, request.limit);
    return {
      ended: undefined,
      claimed: await this.#chainedClaim(connection, () => selectRows(connection, select.sql, select.values)),
    };
  }

  /** The claim in the transaction a commit chained on `connection`: the batch `read` resolves, `null` or `{ error }`. */
  async #chainedClaim(
    connection: ConnectionLike,
    read: () => Promise<unknown[][]>,
  ): Promise<BatchEnd<MysqlRowLockToken>["claimed"]> {
    const { table } = this.#context;
    try {
      const claimed = await read();
      if (claimed.length === 0) {
        await commitAndRelease(connection);
        return null;
      }
      return {
        rows: claimed.map((values) => claimedRowOf(table, values, false)),
        token: { form: "rowLock", connection },
      };
    } catch (error) {
      await rollbackAndRelease(connection, error).catch(() => undefined);
      return { error: normalizeError(error, { table: table.name, operation: "row lock claim" }) };
    }
  }

  /**
   * MariaDB: the acks, `COMMIT AND CHAIN`, a mark of the commit (`chainMarkSql`) and the claim as
   * one compound statement. After an error the mark tells whether the batch committed (only the
   * claim failed) or not (the batch rolls back and the claim runs on its own).
   */
  async #carryInOneStatement(
    token: MysqlRowLockToken,
    { rows, settlement }: Acks<ClaimedRow>,
    request: ClaimRequest,
  ): Promise<BatchEnd<MysqlRowLockToken>> {
    const { statements } = this.#context;
    const { connection } = token;
    const acks = this.#settlements.ackSteps(settlement, rows, "mariadb");
    const select = statements.rowLockClaim(request.now, request.limit);
    chainMarks += 1;
    const mark = chainMarks;
    let claimed: unknown[][];
    try {
      const [results] = await connection.query({
        sql: compoundSql([...acks.statements, transactionSql.commitAndChain, chainMarkSql.set, select.sql]),
        values: [...acks.values, mark, ...select.values],
        rowsAsArray: true,
      });
      claimed = (results as unknown[][][])[0] ?? [];
    } catch (error) {
      return this.#carryFailed(token, request, mark, error, settlement);
    }
    return { ended: undefined, claimed: await this.#chainedClaim(connection, async () => claimed) };
  }

  /** After a compound carry failed with `error`: which part failed, read from the commit's mark. */
  async #carryFailed(
    token: MysqlRowLockToken,
    request: ClaimRequest,
    mark: number,
    error: unknown,
    settlement: AckSettlement,
  ): Promise<BatchEnd<MysqlRowLockToken>> {
    const { table } = this.#context;
    const { connection } = token;
    let committed: boolean;
    try {
      if (classifyError(error).connectionLost) throw error;
      const [row] = await selectRows(connection, chainMarkSql.read, []);
      committed = Number(row?.[0]) === mark;
    } catch {
      letGo(connection, true);
      const lost = normalizeError(error, { table: table.name, operation: "row lock commit" });
      return { ended: { error: lost }, claimed: { error: lost } };
    }
    if (committed) {
      await rollbackAndRelease(connection, error).catch(() => undefined);
      return {
        ended: undefined,
        claimed: { error: normalizeError(error, { table: table.name, operation: "row lock claim" }) },
      };
    }
    await this.release(token).catch(() => undefined);
    const ended = normalizeError(error, {
      table: table.name,
      operation: `row lock ${settlement.kind} (coalesced)`,
    });
    return { ended: { error: ended }, claimed: await this.claim(request).catch(failed) };
  }

  /** The batch's acks as one statement inside its transaction (normalized errors). */
  async #ack(token: MysqlRowLockToken, { rows, settlement }: Acks<ClaimedRow>): Promise<void> {
    const [row] = rows;
    if (rows.length === 1 && row !== undefined) return this.settle(token, row, settlement);
    if (rows.length === 0) return;
    try {
      const bound = this.#settlements.ackMany(settlement, rows, this.#context.family);
      await run(token.connection, bound.sql, bound.values);
    } catch (error) {
      throw normalizeError(error, {
        table: this.#context.table.name,
        operation: `row lock ${settlement.kind} (coalesced)`,
      });
    }
  }

  release(token: MysqlRowLockToken): Promise<void> {
    // A transactional body still running on it: close the session, so its next statement fails.
    if (bodyRunning(token.connection)) {
      letGo(token.connection, true);
      return Promise.resolve();
    }
    return rollbackAndRelease(token.connection, undefined, token.guard);
  }

  /** Transactional handlers: the body and its settlement behind a savepoint (`src/transactional.ts`). */
  transaction(token: MysqlRowLockToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    return rowLockTransaction(token.connection, this.#settlements, this.#context.table, row.id, work);
  }

  async close(): Promise<void> {}
}
