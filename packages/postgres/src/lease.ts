/**
 * The lease form: one statement claims (a CTE locking the due rows in claim order, then the
 * UPDATE writing the expiry and counting the attempt, returning the rows) and commits at once;
 * no connection is held while the handlers run. Extensions and settlements take effect only
 * where the row still holds the delivery's token, the expiry.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import type {
  Acks,
  Claimed,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  LeaseToken,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { heldAmong, leaseLostOnSettle } from "@rowclaim/core/driver";
import { ArrayParam } from "./array-param.js";
import { claimedRowOf, sortIntoClaimOrder } from "./claimed-row.js";
import { execute, HeldConnection } from "./connection.js";
import { fifoGroupKey, waitFifoGuard } from "./fifo.js";
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
import { leaseTransaction } from "./transactional.js";

/** The id of a row an extension or a coalesced settlement answered (`RETURNING … AS rc_id`). */
function answerId(row: Record<string, unknown>): unknown {
  return row.rc_id;
}

/** What a lease claimer is built from (statements built once, at open). */
export interface LeaseClaimerOptions {
  readonly pool: PoolLike;
  readonly table: TableDefinition;
  readonly group: string | null;
  readonly claim: ClaimStatement;
  readonly extend: Statement;
  readonly settlements: Settlements;
  /** The coalesced acknowledging settlements (`settleMany`). */
  readonly settleMany: SettleManyStatements;
}

/** The lease claimer of one subscription. */
export class PostgresLeaseClaimer implements LeaseClaimer {
  readonly form = "lease" as const;
  readonly #options: LeaseClaimerOptions;
  readonly #fifoKey: string | null;
  /** Whether the claim needs a transaction of its own (an isolation level, or the FIFO guard). */
  readonly #transactional: boolean;

  constructor(options: LeaseClaimerOptions) {
    this.#options = options;
    this.#fifoKey = options.table.fifo ? fifoGroupKey(options.table, options.group) : null;
    this.#transactional = options.table.fifo || options.table.isolation !== undefined;
  }

  async claim(request: LeaseClaimRequest): Promise<readonly Claimed<LeaseToken>[]> {
    const { table, group } = this.#options;
    const values = { now: request.now, expiry: request.expiry, group, limit: request.limit };
    let result: QueryResultLike;
    try {
      result = this.#transactional
        ? await this.#claimInTransaction(values)
        : await execute(this.#options.pool, this.#options.claim.forLimit(request.limit), values);
    } catch (error) {
      if (isClaimConflict(error)) return [];
      throw normalizeError(error, { table: table.name, operation: "lease claim" });
    }
    const token: LeaseToken = { form: "lease", expiry: request.expiry };
    const known = { [table.columns.lockedUntil as string]: request.expiry };
    const claimed = result.rows.map((raw) => ({ row: claimedRowOf(table, raw, true, known), token }));
    return sortIntoClaimOrder(table, claimed);
  }

  async extend(held: readonly HeldLease[], expiry: Date): Promise<readonly (LeaseToken | null)[]> {
    if (held.length === 0) return [];
    let result: QueryResultLike;
    try {
      result = await execute(this.#options.pool, this.#options.extend, {
        expiry,
        ids: new ArrayParam(held.map((hold) => hold.id)),
        tokens: new ArrayParam(held.map((hold) => hold.token.expiry)),
      });
    } catch (error) {
      throw normalizeError(error, {
        table: this.#options.table.name,
        operation: "lease extension",
      });
    }
    const next: LeaseToken = { form: "lease", expiry };
    return heldAmong(held, result.rows, answerId).map((moved) => (moved ? next : null));
  }

  async settle(id: RowId, token: LeaseToken, settlement: Settlement): Promise<void> {
    const { table, settlements, pool } = this.#options;
    let changed: number | null;
    try {
      changed = await settlements.apply(pool, id, settlement, token.expiry);
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        operation: `lease ${settlement.kind} settlement`,
      });
    }
    if (changed === 0) throw leaseLostOnSettle(table.name, id, token.expiry, settlement.kind);
  }

  /**
   * Coalesced settlements: one statement (one implicit transaction, one commit) settles every
   * row of `held` that still holds its own token (`lockedUntil = token.expiry`; the tokens may
   * differ from row to row). Resolves, in order, `true` for each row settled and `false` for
   * each row that holds another token or is gone (left unchanged). A database error rejects
   * (normalized), and then no row changed: the statement is atomic.
   */
  async settleMany({ rows: held, settlement }: Acks<HeldLease>): Promise<readonly boolean[]> {
    const { table, pool, settleMany } = this.#options;
    if (held.length === 0) return [];
    const stmt = settlement.kind === "delete" ? settleMany.delete : settleMany.markProcessed;
    if (stmt === null) {
      throw new InvalidArgumentError(
        `Table "${table.name}" (lease form): a markProcessed settlement needs a processedAt column; the table describes none.`,
        { table: table.name },
      );
    }
    let result: QueryResultLike;
    try {
      result = await execute(pool, stmt, {
        ids: new ArrayParam(held.map((hold) => hold.id)),
        tokens: new ArrayParam(held.map((hold) => hold.token.expiry)),
        ...(settlement.kind === "markProcessed" ? { at: settlement.at } : {}),
      });
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        operation: `lease coalesced ${settlement.kind} settlement`,
      });
    }
    return heldAmong(held, result.rows, answerId);
  }

  /** Transactional handlers: the body and the fenced settlement in one transaction (`src/transactional.ts`). */
  transaction(
    id: RowId,
    work: TransactionWork,
    fence: () => Promise<LeaseToken>,
    signal: AbortSignal,
  ): Promise<void> {
    const { pool, settlements, table } = this.#options;
    return leaseTransaction(pool, settlements, table, id, work, fence, signal);
  }

  async close(): Promise<void> {}

  async #claimInTransaction(
    values: { readonly limit: number } & Record<string, unknown>,
  ): Promise<QueryResultLike> {
    const connection = await HeldConnection.acquire(this.#options.pool);
    try {
      await connection.text(beginSql(this.#options.table.isolation));
      if (this.#fifoKey !== null) await waitFifoGuard(connection, this.#fifoKey);
      const result = await connection.run(this.#options.claim.forLimit(values.limit), values);
      await connection.text(commitSql);
      return result;
    } catch (error) {
      await connection.text(rollbackSql).catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
  }
}
