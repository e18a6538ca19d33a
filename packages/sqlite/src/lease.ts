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
import {
  type Claimed,
  type LeaseClaimer,
  type LeaseClaimRequest,
  LeaseLostError,
  type LeaseToken,
  type RowId,
  type Settlement,
  type TableDefinition,
  type TransactionMode,
  type TransactionWork,
} from "@rowclaim/core";
import { type BusyRetryPolicy, retryBusy } from "./busy-retry.js";
import type { SqliteDatabase, SqliteStatement } from "./database.js";
import { normalizeError } from "./normalize-error.js";
import { sortClaimOrder, toClaimedRow, toEpochMs } from "./rows.js";
import { checkSchema, type NamedStatement } from "./schema.js";
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
    const { db, group, mode, busy } = this.#context;
    const parameters = {
      group,
      now: toEpochMs(request.now),
      expiry: toEpochMs(request.expiry),
      limit: Math.max(1, Math.floor(request.limit)),
    };
    let rows: Record<string, unknown>[];
    try {
      const claim = this.#claimFor(parameters.limit);
      // An UPDATE takes the write lock as it starts, so alone it is already the IMMEDIATE
      // transaction the default mode asks for: no BEGIN and COMMIT around it.
      rows = await retryBusy(db, busy, () =>
        mode === "immediate"
          ? (claim.all(parameters) as Record<string, unknown>[])
          : inTransaction(db, mode, () => claim.all(parameters) as Record<string, unknown>[]),
      );
    } catch (error) {
      throw normalizeError(error, {
        table: this.#table.name,
        operation: "the lease claim",
        statement: this.#claimSql,
      });
    }
    const token: LeaseToken = { form: "lease", expiry: new Date(parameters.expiry) };
    return sortClaimOrder(this.#table, rows).map((row) => ({
      row: toClaimedRow(this.#table, row, true),
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

  async extend(
    held: readonly { readonly id: RowId; readonly token: LeaseToken }[],
    expiry: Date,
  ): Promise<readonly (LeaseToken | null)[]> {
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
    if (changed === 0) {
      throw new LeaseLostError(
        `Table "${this.#table.name}" (SQLite, lease form): row ${String(id)} no longer holds this delivery's lease (expiry ${token.expiry.toISOString()}), so its ${settlement.kind} settlement changed nothing. The lease ran out and another claim took the row (or it is gone): make the lease longer than the handler can stall, or keep lease extension on.`,
        { table: this.#table.name },
      );
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
