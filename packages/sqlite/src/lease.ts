/**
 * The lease form on SQLite. A claim is one `UPDATE … RETURNING` (IMMEDIATE mode: the statement
 * alone, which takes the write lock as it starts; other modes in BEGIN … COMMIT), its rows sorted
 * into claim order here. Extensions and settlements apply only where the row still holds the
 * delivery's token (`lockedUntil = @token`). A FIFO claim needs no guard: SQLite's single writer
 * is one.
 *
 * @module
 */
import type { RowId, TableDefinition, TransactionMode } from "@rowclaim/core";
import type {
  Acks,
  Claimed,
  ClaimedWithAcks,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  LeaseToken,
  RawClaimedRow,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { decodeClaimedRow, leaseLostOnSettle } from "@rowclaim/core/driver";
import { type BusyRetryPolicy, retryBusy, retryBusyAs } from "./busy-retry.js";
import { sortClaimOrder } from "./claimed-row.js";
import type { SqliteDatabase, SqliteStatement } from "./database.js";
import { normalizeError } from "./normalize-error.js";
import { checkSchema } from "./schema-check.js";
import { SettlementStatements } from "./settle.js";
import { fifoLeaseClaimSql, leaseClaimSql, leaseExtendSql, type QuotedColumns, quoteColumns } from "./sql.js";
import { inTransaction } from "./transaction.js";
import { sqliteTransaction } from "./transactional.js";

/** How a claimer runs: its connection, group, transaction mode and contention policy. */
export interface ClaimerContext {
  readonly db: SqliteDatabase;
  readonly group: string | null;
  readonly mode: TransactionMode;
  readonly busy: BusyRetryPolicy;
}

/** Runs a claim statement: `get` for one row (SQLite makes every change of an `UPDATE … RETURNING` at its first step), else `all`. */
function claimRows(claim: SqliteStatement, parameters: { readonly limit: number }): RawClaimedRow[] {
  if (parameters.limit !== 1) return claim.all(parameters) as RawClaimedRow[];
  const row = claim.get(parameters) as RawClaimedRow | undefined;
  return row === undefined ? [] : [row];
}

/** The lease form's claimer for one subscription. */
export class SqliteLeaseClaimer implements LeaseClaimer {
  readonly form = "lease";
  readonly #table: TableDefinition;
  readonly #context: ClaimerContext;
  readonly #claim: SqliteStatement;
  readonly #claimSql: string;
  /** Claim statements with their limit written in (see `leaseClaimSql`), by limit; not FIFO. */
  readonly #claimsByLimit = new Map<number, SqliteStatement>();
  readonly #leased: (QuotedColumns & { lockedUntil: string }) | undefined;
  readonly #extend: SqliteStatement;
  readonly #settlements: SettlementStatements;

  /**
   * Checks the table (and its dead-letter table) and prepares every statement.
   *
   * @throws {SchemaError} a table or column is missing.
   * @throws {ServerTooOldError} SQLite is older than 3.35.
   */
  constructor(table: TableDefinition, context: ClaimerContext) {
    const columns = quoteColumns(table);
    const leased = columns as QuotedColumns & { lockedUntil: string };
    this.#table = table;
    this.#context = context;
    const fifo = table.fifo && columns.group !== undefined;
    this.#leased = fifo ? undefined : leased;
    this.#claimSql = fifo
      ? fifoLeaseClaimSql(leased as typeof leased & { group: string })
      : leaseClaimSql(leased);
    const extendSql = leaseExtendSql(leased);
    checkSchema(context.db, table, { name: table.name, role: "table" }, table.allColumns, [
      { name: "the lease claim (UPDATE … RETURNING)", sql: this.#claimSql },
      { name: "the lease extension", sql: extendSql },
      ...SettlementStatements.named(columns, true),
    ]);
    try {
      this.#claim = context.db.prepare(this.#claimSql);
      this.#extend = context.db.prepare(extendSql);
      this.#settlements = new SettlementStatements(context.db, table, columns, true);
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        operation: "preparing the lease statements",
        statement: this.#claimSql,
      });
    }
  }

  async claim(request: LeaseClaimRequest): Promise<readonly Claimed<LeaseToken>[]> {
    const { db, mode, busy } = this.#context;
    const parameters = this.#claimParameters(request);
    let rows: RawClaimedRow[];
    try {
      const claim = this.#claimFor(parameters.limit);
      rows = await retryBusy(db, busy, () =>
        mode === "immediate"
          ? claimRows(claim, parameters)
          : inTransaction(db, mode, () => claimRows(claim, parameters)),
      );
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: "the lease claim",
        statement: this.#claimSql,
      });
    }
    return this.#claimed(rows, parameters.expiry);
  }

  /** Acks sent with the next claim: their settlements, then the claim, in one transaction (IMMEDIATE, or the table's EXCLUSIVE mode). */
  async claimWithAcks(
    { rows: held, settlement }: Acks<HeldLease>,
    request: LeaseClaimRequest,
  ): Promise<ClaimedWithAcks<LeaseToken>> {
    const { db, mode, busy } = this.#context;
    const parameters = this.#claimParameters(request);
    let result: { settled: boolean[]; rows: RawClaimedRow[] };
    try {
      const claim = this.#claimFor(parameters.limit);
      result = await retryBusy(db, busy, () =>
        inTransaction(db, mode === "exclusive" ? "exclusive" : "immediate", () => ({
          settled: this.#settlements.ackEachWithin(held, settlement),
          rows: claimRows(claim, parameters),
        })),
      );
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: `the ${settlement.kind} settlement of ${held.length} row(s) with the next lease claim`,
        statement: this.#claimSql,
      });
    }
    return { settled: result.settled, claimed: this.#claimed(result.rows, parameters.expiry) };
  }

  /** A claim statement's parameters. */
  #claimParameters(request: LeaseClaimRequest) {
    return {
      group: this.#context.group,
      now: request.now.getTime(),
      expiry: request.expiry.getTime(),
      limit: Math.max(1, Math.floor(request.limit)),
    };
  }

  /** The claimed rows in claim order, each with the claim's token. */
  #claimed(rows: RawClaimedRow[], expiry: number): Claimed<LeaseToken>[] {
    const token: LeaseToken = { form: "lease", expiry: new Date(expiry) };
    if (rows.length > 1) sortClaimOrder(this.#table, rows);
    return rows.map((row) => ({ row: decodeClaimedRow(this.#table, row, true), token }));
  }

  /** The claim statement for `limit` rows: its limit written in (prepared once per limit), FIFO's own. */
  #claimFor(limit: number): SqliteStatement {
    if (this.#leased === undefined) return this.#claim;
    let claim = this.#claimsByLimit.get(limit);
    if (claim === undefined) {
      claim = this.#context.db.prepare(leaseClaimSql(this.#leased, limit));
      this.#claimsByLimit.set(limit, claim);
    }
    return claim;
  }

  async extend(held: readonly HeldLease[], expiry: Date): Promise<readonly (LeaseToken | null)[]> {
    if (held.length === 0) return [];
    const { db, busy } = this.#context;
    const next: LeaseToken = { form: "lease", expiry: new Date(expiry.getTime()) };
    return retryBusyAs(db, busy, { table: this.#table.name, operation: "extending leases" }, () =>
      inTransaction(db, "immediate", () =>
        held.map(({ id, token }) =>
          this.#extend.run({ id, token: token.expiry.getTime(), expiry: expiry.getTime() }).changes > 0
            ? next
            : null,
        ),
      ),
    );
  }

  async settle(id: RowId, token: LeaseToken, settlement: Settlement): Promise<void> {
    const { db, busy } = this.#context;
    const context = {
      table: this.#table.name,
      operation: `the ${settlement.kind} settlement of row ${String(id)}`,
    };
    const changed = await retryBusyAs(db, busy, context, () =>
      this.#settlements.apply(id, token.expiry, settlement),
    );
    if (changed === 0) throw leaseLostOnSettle(this.#table.name, id, token.expiry, settlement.kind);
  }

  /**
   * Coalesced acks: `settlement` on every row of `held` that still holds its own token, as the
   * single-row statements in one `BEGIN IMMEDIATE … COMMIT` (one disk sync under `synchronous =
   * FULL`). Returns, in order, whether each row was settled.
   *
   * @throws the database's error (normalised); the transaction rolled back and no row changed.
   */
  async settleMany({ rows: held, settlement }: Acks<HeldLease>): Promise<readonly boolean[]> {
    if (held.length === 0) return [];
    const { db, busy } = this.#context;
    const context = {
      table: this.#table.name,
      operation: `the ${settlement.kind} settlement of ${held.length} rows`,
    };
    return retryBusyAs(db, busy, context, () => this.#settlements.applyAckEach(held, settlement));
  }

  /** Transactional handlers (`transactional.ts`): fences the token, then runs the body and the settlement. */
  async transaction(id: RowId, work: TransactionWork, fence: () => Promise<LeaseToken>): Promise<void> {
    const token = await fence();
    const { db, busy } = this.#context;
    await sqliteTransaction({
      db,
      busy,
      table: this.#table,
      id,
      token: token.expiry,
      settlements: this.#settlements,
      work,
    });
  }

  async close(): Promise<void> {}
}
