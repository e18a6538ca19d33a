/**
 * The lease form on SQLite. A claim is one `UPDATE … SET lockedUntil = @expiry, attempt =
 * attempt + 1 WHERE id IN (… claimable … ORDER BY … LIMIT @limit) RETURNING …` in a transaction
 * of the table's mode (IMMEDIATE unless the table says otherwise: the statement alone, which
 * takes the write lock as it starts; other modes in BEGIN … COMMIT); the rows come back
 * in no order and are sorted into claim order here. Extensions and settlements apply only where
 * the row still holds the delivery's token (`lockedUntil = @token`); a settlement that finds
 * none fails with `LEASE_LOST` and changes nothing. A FIFO claim takes the head of its group
 * only, and nothing while a row of the group is in work: SQLite's single writer is the guard.
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
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { leaseLostOnSettle } from "@rowclaim/core/driver";
import { type BusyRetryPolicy, retryBusy } from "./busy-retry.js";
import { claimedRowOf, sortClaimOrder, toEpochMs } from "./claimed-row.js";
import type { SqliteDatabase, SqliteStatement } from "./database.js";
import { normalizeError } from "./normalize-error.js";
import { checkSchema, type NamedStatement } from "./schema-check.js";
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

/**
 * Runs a claim statement: `get` where it can take one row (no array for the common claim of a
 * single row; SQLite makes every change of an `UPDATE … RETURNING` at its first step), else `all`.
 */
function claimRows(
  claim: SqliteStatement,
  parameters: { readonly limit: number },
): Record<string, unknown>[] {
  if (parameters.limit !== 1) return claim.all(parameters) as Record<string, unknown>[];
  const row = claim.get(parameters) as Record<string, unknown> | undefined;
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
   * Checks the table (every described column, the dead-letter table) and prepares every
   * statement.
   *
   * @throws {SchemaError} a table or column is missing.
   * @throws {ServerTooOldError} SQLite is older than 3.35.
   */
  constructor(table: TableDefinition, context: ClaimerContext) {
    const columns = quoteColumns(table);
    const leased = columns as QuotedColumns & { lockedUntil: string };
    this.#table = table;
    this.#context = context;
    this.#leased = table.fifo && columns.group !== undefined ? undefined : leased;
    this.#claimSql =
      table.fifo && columns.group !== undefined
        ? fifoLeaseClaimSql(leased as typeof leased & { group: string })
        : leaseClaimSql(leased);
    const extendSql = leaseExtendSql(leased);
    const statements: NamedStatement[] = [
      { name: "the lease claim (UPDATE … RETURNING)", sql: this.#claimSql },
      { name: "the lease extension", sql: extendSql },
      ...SettlementStatements.named(columns, true),
    ];
    checkSchema(context.db, table, { name: table.name, role: "table" }, table.allColumns, statements);
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
    let rows: Record<string, unknown>[];
    try {
      const claim = this.#claimFor(parameters.limit);
      // An UPDATE takes the write lock as it starts, so alone it is already the IMMEDIATE
      // transaction the default mode asks for: no BEGIN and COMMIT around it.
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

  /**
   * Acks sent with the next claim: the acks' statements (as {@link SqliteLeaseClaimer.settleMany},
   * each row fenced by its own token) and then the claim statement, in one transaction (IMMEDIATE,
   * or the table's EXCLUSIVE mode) and one commit: under `synchronous = FULL`, one disk sync for
   * both instead of two. better-sqlite3 runs it synchronously, so nothing else of the process
   * runs inside it. A row of `held` is settled before the claim runs, so the claim never takes
   * it. On any failure the transaction rolls back: nothing settled, nothing claimed.
   */
  async claimWithAcks(
    { rows: held, settlement }: Acks<HeldLease>,
    request: LeaseClaimRequest,
  ): Promise<ClaimedWithAcks<LeaseToken>> {
    const { db, mode, busy } = this.#context;
    const parameters = this.#claimParameters(request);
    let result: { settled: boolean[]; rows: Record<string, unknown>[] };
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
  #claimParameters(request: LeaseClaimRequest): {
    group: string | null;
    now: number;
    expiry: number;
    limit: number;
  } {
    return {
      group: this.#context.group,
      now: toEpochMs(request.now),
      expiry: toEpochMs(request.expiry),
      limit: Math.max(1, Math.floor(request.limit)),
    };
  }

  /** The claimed rows in claim order, each with the claim's token. */
  #claimed(rows: Record<string, unknown>[], expiry: number): Claimed<LeaseToken>[] {
    const token: LeaseToken = { form: "lease", expiry: new Date(expiry) };
    if (rows.length > 1) sortClaimOrder(this.#table, rows);
    return rows.map((row) => ({
      row: claimedRowOf(this.#table, row, true),
      token,
    }));
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
    const next: LeaseToken = { form: "lease", expiry: new Date(toEpochMs(expiry)) };
    try {
      return await retryBusy(db, busy, () =>
        inTransaction(db, "immediate", () =>
          held.map(({ id, token }) =>
            this.#extend.run({ id, token: toEpochMs(token.expiry), expiry: toEpochMs(expiry) }).changes > 0
              ? next
              : null,
          ),
        ),
      );
    } catch (error) {
      throw normalizeError(error, { table: this.#table.name, operation: "extending leases" });
    }
  }

  async settle(id: RowId, token: LeaseToken, settlement: Settlement): Promise<void> {
    const { db, busy } = this.#context;
    let changed: number;
    try {
      changed = await retryBusy(db, busy, () => this.#settlements.apply(id, token.expiry, settlement));
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: `the ${settlement.kind} settlement of row ${String(id)}`,
      });
    }
    if (changed === 0) throw leaseLostOnSettle(this.#table.name, id, token.expiry, settlement.kind);
  }

  /**
   * Coalesced acks: applies `settlement` (delete or markProcessed) to every row of `held` that
   * still holds its own token (`lockedUntil = token.expiry`, per row), as the rows' single-row
   * settlement statements inside one `BEGIN IMMEDIATE … COMMIT`: one commit (one disk sync
   * under `synchronous = FULL`) for the whole call, and each row's own `changes` tells whether it still held its lease.
   * better-sqlite3 runs the transaction synchronously, so nothing else of the process runs
   * inside it; another process waits on SQLite's write lock (contention is retried as for
   * `settle`). Returns, in order, `true` where the row was settled and `false` where it holds
   * another token or is gone (unchanged).
   *
   * @throws the database's error (normalised to a `BrokerError` where its code maps to one); the
   * transaction rolled back and no row changed.
   */
  async settleMany({ rows: held, settlement }: Acks<HeldLease>): Promise<readonly boolean[]> {
    if (held.length === 0) return [];
    const { db, busy } = this.#context;
    try {
      return await retryBusy(db, busy, () => this.#settlements.applyAckEach(held, settlement));
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: `the ${settlement.kind} settlement of ${held.length} rows`,
      });
    }
  }

  /**
   * Transactional handlers: fences the token, then runs the synchronous body and the settlement
   * in one IMMEDIATE transaction (`src/transactional.ts`).
   */
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
