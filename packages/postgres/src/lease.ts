/**
 * The lease form: one statement claims and commits at once; no connection is held while the
 * handlers run. Extensions and settlements apply only where the row still holds its token, the expiry.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import type {
  Acks,
  Claimed,
  ClaimedWithAcks,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  LeaseToken,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { allHeld, heldAmong, leaseLostOnSettle, runLeaseTransaction } from "@rowclaim/core/driver";
import { ArrayParam } from "./array-param.js";
import { claimedRowOf, sortIntoClaimOrder } from "./claimed-row.js";
import { execute, HeldConnection, type StatementRun } from "./connection.js";
import { fifoGroupKey } from "./fifo.js";
import { isClaimConflict, normalizeError } from "./normalize-error.js";
import type { PoolLike, QueryResultLike } from "./pool-like.js";
import { noProcessedAt, type Settlements, settlementValues } from "./settle.js";
import {
  beginSql,
  type ClaimStatement,
  commitSql,
  fifoWaitGuard,
  LEASE_ACKED_ALIAS,
  type LeaseAcks,
  type LeaseClaimWithAcksStatements,
  rollbackSql,
  type SettleManyStatements,
  type Statement,
  settledAll,
} from "./sql.js";
import { dialectFor, sessionOf } from "./transactional.js";

/** The id of a row an extension or a coalesced settlement answered (`RETURNING … AS rc_id`). */
function answerId(row: Record<string, unknown>): unknown {
  return row.rc_id;
}

/** The held rows' ids and tokens as `$ids` and `$tokens`. */
function heldPairs(held: readonly HeldLease[]): Record<string, ArrayParam> {
  const ids = new Array<unknown>(held.length);
  const tokens = new Array<Date>(held.length);
  for (let index = 0; index < held.length; index += 1) {
    const hold = held[index] as HeldLease;
    ids[index] = hold.id;
    tokens[index] = hold.token.expiry;
  }
  return { ids: new ArrayParam(ids), tokens: new ArrayParam(tokens) };
}

/** The values of a lease ack statement: the held pairs (or `$id`, `$token` for `"one"`), and `$at` for markProcessed. */
function ackValues(
  { rows: held, settlement }: Acks<HeldLease>,
  acks: LeaseAcks = "many",
): Record<string, unknown> {
  const at = settlementValues(settlement);
  const one = held[0];
  if (acks === "one" && one !== undefined) return { id: one.id, token: one.token.expiry, ...at };
  return { ...heldPairs(held), ...at };
}

/** Per held row, in order, whether a coalesced settlement's answer says it settled (see `settledAll`). */
function settledAmong(held: readonly HeldLease[], rows: readonly Record<string, unknown>[]): boolean[] {
  return settledAll(rows) ? allHeld(held) : heldAmong(held, rows, answerId);
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
  /** The acks and the next claim in one statement (`claimWithAcks`, tables whose claim needs no transaction). */
  readonly claimWithAcks: LeaseClaimWithAcksStatements;
  /** The same for exactly one ack, which PostgreSQL plans once (see `LeaseAcks`). */
  readonly claimWithOneAck: LeaseClaimWithAcksStatements;
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
    return this.#claimedRows(result.rows, request.expiry);
  }

  async extend(held: readonly HeldLease[], expiry: Date): Promise<readonly (LeaseToken | null)[]> {
    if (held.length === 0) return [];
    const { pool, extend, table } = this.#options;
    const result = await execute(pool, extend, { expiry, ...heldPairs(held) }).catch((error: unknown) => {
      throw normalizeError(error, { table: table.name, operation: "lease extension" });
    });
    const next: LeaseToken = { form: "lease", expiry };
    return heldAmong(held, result.rows, answerId).map((moved) => (moved ? next : null));
  }

  async settle(id: RowId, token: LeaseToken, settlement: Settlement): Promise<void> {
    const { table, settlements, pool } = this.#options;
    const changed = await settlements.apply(pool, id, settlement, token.expiry).catch((error: unknown) => {
      throw normalizeError(error, { table: table.name, operation: `lease ${settlement.kind} settlement` });
    });
    if (changed === 0) throw leaseLostOnSettle(table.name, id, token.expiry, settlement.kind);
  }

  /** Coalesced settlements in one statement, each row fenced by its own token (DRIVERS.md, "Lease"). */
  async settleMany(acks: Acks<HeldLease>): Promise<readonly boolean[]> {
    const { table, pool } = this.#options;
    const { rows: held, settlement } = acks;
    if (held.length === 0) return [];
    const ack = this.#ackStatement(acks);
    const result = await execute(pool, ack.stmt, ack.values).catch((error: unknown) => {
      throw normalizeError(error, {
        table: table.name,
        operation: `lease coalesced ${settlement.kind} settlement`,
      });
    });
    return settledAmong(held, result.rows);
  }

  /**
   * Acks sent with the next claim, one commit for both (DRIVERS.md, "Lease"): one statement
   * (`leaseClaimWithAcksSql`), or one transaction on a FIFO table or one with an isolation level.
   */
  async claimWithAcks(
    acks: Acks<HeldLease>,
    request: LeaseClaimRequest,
  ): Promise<ClaimedWithAcks<LeaseToken>> {
    const { table, group, pool } = this.#options;
    const { settlement } = acks;
    const operation = `lease ${settlement.kind} settlement with the next claim`;
    const values = { now: request.now, expiry: request.expiry, group, limit: request.limit };
    if (this.#transactional) {
      const ack = this.#ackStatement(acks);
      const result = await this.#claimInTransaction(values, ack).catch((error: unknown) => {
        throw normalizeError(error, { table: table.name, operation });
      });
      return {
        settled: settledAmong(acks.rows, result.acked?.rows ?? []),
        claimed: this.#claimedRows(result.rows, request.expiry),
      };
    }
    const one = acks.rows.length === 1;
    const claim = (one ? this.#options.claimWithOneAck : this.#options.claimWithAcks)[settlement.kind];
    if (claim === null) throw noProcessedAt(table);
    const result = await execute(pool, claim.forLimit(request.limit), {
      ...ackValues(acks, one ? "one" : "many"),
      ...values,
    }).catch((error: unknown) => {
      throw normalizeError(error, { table: table.name, operation });
    });
    const first = result.rows[0];
    const acked = first?.[LEASE_ACKED_ALIAS];
    // No row claimed: the one row the statement answers holds NULL in every column but the acks'.
    const rows = first !== undefined && first[table.columns.id] === null ? [] : result.rows;
    return {
      // An empty array: every ack settled (the statement then sends none of their ids).
      settled:
        Array.isArray(acked) && acked.length === 0
          ? allHeld(acks.rows)
          : heldAmong(acks.rows, Array.isArray(acked) ? acked : []),
      claimed: this.#claimedRows(rows, request.expiry),
    };
  }

  /** The coalesced ack statement of `acks` and its values (see {@link PostgresLeaseClaimer.settleMany}). */
  #ackStatement(acks: Acks<HeldLease>): StatementRun {
    const { settleMany } = this.#options;
    const stmt = settleMany[acks.settlement.kind];
    if (stmt === null) throw noProcessedAt(this.#options.table);
    return { stmt, values: ackValues(acks) };
  }

  /** The rows a claim answered as claimed rows in claim order, each with the claim's token (`expiry`). */
  #claimedRows(rows: readonly Record<string, unknown>[], expiry: Date): Claimed<LeaseToken>[] {
    const { table } = this.#options;
    const token: LeaseToken = { form: "lease", expiry };
    const lockedUntil = table.columns.lockedUntil;
    // A loop, not a closure made per claim (the conformance package's DRIVERS.md, "The hot path").
    const claimed = new Array<Claimed<LeaseToken>>(rows.length);
    for (let index = 0; index < rows.length; index += 1) {
      const raw = rows[index] as Record<string, unknown>;
      claimed[index] = { row: claimedRowOf(table, raw, true, lockedUntil, expiry), token };
    }
    return sortIntoClaimOrder(table, claimed);
  }

  /** Transactional handlers: the body and the fenced settlement in one transaction (`src/transactional.ts`). */
  transaction(
    id: RowId,
    work: TransactionWork,
    fence: () => Promise<LeaseToken>,
    signal: AbortSignal,
  ): Promise<void> {
    const { pool, settlements, table } = this.#options;
    const acquire = async () => sessionOf(await HeldConnection.acquire(pool));
    const dialect = dialectFor(settlements, table, id);
    return runLeaseTransaction(acquire, dialect, { table, id }, work, fence, signal);
  }

  async close(): Promise<void> {}

  async #claimInTransaction(
    values: { readonly limit: number } & Record<string, unknown>,
    ack?: StatementRun,
  ): Promise<QueryResultLike & { readonly acked?: QueryResultLike }> {
    const connection = await HeldConnection.acquire(this.#options.pool);
    try {
      await connection.text(beginSql(this.#options.table.isolation));
      // The guard first, as a claim takes it: claims of the group queue on it, not on the acks' rows.
      if (this.#fifoKey !== null) await connection.run(fifoWaitGuard, { key: this.#fifoKey });
      const acked = ack === undefined ? undefined : await connection.run(ack.stmt, ack.values);
      const result = await connection.run(this.#options.claim.forLimit(values.limit), values);
      await connection.text(commitSql);
      return acked === undefined ? result : { ...result, acked };
    } catch (error) {
      await connection.text(rollbackSql).catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
  }
}
