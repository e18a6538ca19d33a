/**
 * The lease form on MySQL/MariaDB (DRIVERS.md, "Lease form"): a claim is one short transaction, a
 * locking select that reads the rows whole and one `UPDATE` of them; with no `UPDATE … RETURNING`,
 * the claim writes the update's values into the rows it read (a FIFO head is read back).
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import type {
  AckSettlement,
  Acks,
  Claimed,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  LeaseToken,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { allHeld, heldAmong, heldAmongOnce, leaseLostOnSettle, rowIdKey } from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import type { ClaimerContext } from "./claimer-context.js";
import { fifoGuardRelease, LEASE_GUARD_WAIT_SECONDS, leaseFifoHead, takeFifoGuard } from "./fifo.js";
import { classifyError, normalizeError } from "./normalize-error.js";
import { letGo, matchedRows, run, selectRows } from "./pool-like.js";
import { withDeadlockRetry } from "./retry.js";
import { applySettlement } from "./settle.js";
import { type SettlementStatements, transactionSql } from "./sql.js";
import { beginAt, commitAndRelease, rollbackAndRelease, type SessionLockRelease } from "./transaction.js";
import { leaseTransaction } from "./transactional.js";

/** How many candidates a one-row lease claim reads (`#claimSingle`). */
const SINGLE_CLAIM_CANDIDATES = 3;

/** The lease claimer of one subscription. */
export class MysqlLeaseClaimer implements LeaseClaimer {
  readonly form = "lease" as const;
  readonly #context: ClaimerContext;
  readonly #settlements: SettlementStatements;

  /** Where the id, lockedUntil and attempt columns sit in a row read in `allColumns` order. */
  readonly #idIndex: number;
  readonly #lockedUntilIndex: number;
  readonly #attemptIndex: number;

  constructor(context: ClaimerContext) {
    this.#context = context;
    this.#settlements = context.statements.settlements({ countAttempt: false, tokenGuard: true });
    const { allColumns, columns } = context.table;
    this.#idIndex = allColumns.indexOf(columns.id);
    this.#lockedUntilIndex = columns.lockedUntil === undefined ? -1 : allColumns.indexOf(columns.lockedUntil);
    this.#attemptIndex = columns.attempt === undefined ? -1 : allColumns.indexOf(columns.attempt);
  }

  /** A row read before the claim's update, with the values the update wrote: the expiry and `attempt + 1`. */
  readonly #takenValues = (values: unknown[], expiry: Date): unknown[] => {
    const taken = values.slice();
    if (this.#lockedUntilIndex >= 0) taken[this.#lockedUntilIndex] = expiry;
    if (this.#attemptIndex >= 0) taken[this.#attemptIndex] = Number(taken[this.#attemptIndex]) + 1;
    return taken;
  };

  claim(request: LeaseClaimRequest): Promise<readonly Claimed<LeaseToken>[]> {
    return withDeadlockRetry(async () => {
      if (request.limit === 1 && !this.#context.table.fifo) {
        const single = await this.#claimSingle(request);
        if (single !== null) return single;
      }
      return this.#claimOnce(request);
    });
  }

  /**
   * A claim of one row in two autocommitted statements instead of a transaction's four: a plain
   * read of a few candidates, then per candidate `leaseTakeOne`, whose update checks the row's
   * latest committed version (and, by the attempt, that nothing came between). `null` when other
   * claims took every candidate first: the caller then claims with the transaction.
   */
  async #claimSingle({ now, expiry }: LeaseClaimRequest): Promise<readonly Claimed<LeaseToken>[] | null> {
    const { pool, table, statements } = this.#context;
    const connection = await pool.getConnection();
    let broken = false;
    try {
      const read = statements.leaseCandidates(now, SINGLE_CLAIM_CANDIDATES);
      const candidates = await selectRows(connection, read.sql, read.values);
      if (candidates.length === 0) return [];
      for (const values of candidates) {
        const take = statements.leaseTakeOne(
          values[this.#idIndex],
          expiry,
          now,
          this.#attemptIndex >= 0 ? values[this.#attemptIndex] : undefined,
        );
        if (matchedRows(await run(connection, take.sql, take.values)) === 1) {
          const token: LeaseToken = Object.freeze({ form: "lease", expiry });
          return [{ row: claimedRowOf(table, this.#takenValues(values, expiry), true), token }];
        }
      }
      return null;
    } catch (error) {
      broken = classifyError(error).connectionLost;
      throw normalizeError(error, { table: table.name, operation: "lease claim" });
    } finally {
      letGo(connection, broken);
    }
  }

  async #claimOnce({ limit, now, expiry }: LeaseClaimRequest): Promise<readonly Claimed<LeaseToken>[]> {
    const { pool, table, statements } = this.#context;
    const idIndex = this.#idIndex;
    const takenValues = this.#takenValues;
    const connection = await pool.getConnection();
    let guard: SessionLockRelease | undefined;
    try {
      await beginAt(connection, table.isolation ?? "read committed");
      let ids: unknown[];
      let selected: unknown[][] | undefined;
      if (table.fifo) {
        if (!(await takeFifoGuard(connection, statements, LEASE_GUARD_WAIT_SECONDS))) {
          await commitAndRelease(connection);
          return [];
        }
        guard = fifoGuardRelease(statements);
        const head = await leaseFifoHead(connection, statements, now);
        ids = head === null ? [] : [head];
      } else {
        const select = statements.leaseSelect(now, limit);
        selected = await selectRows(connection, select.sql, select.values);
        ids = selected.map((row) => row[idIndex]);
      }
      if (ids.length === 0) {
        await commitAndRelease(connection, guard);
        return [];
      }
      const take = statements.leaseTake(ids, expiry);
      await run(connection, take.sql, take.values);
      let rows: unknown[][];
      if (selected === undefined) {
        const read = statements.readRows(ids);
        rows = await selectRows(connection, read.sql, read.values);
      } else {
        rows = selected.map((values) => takenValues(values, expiry));
      }
      await commitAndRelease(connection, guard);
      const token: LeaseToken = Object.freeze({ form: "lease", expiry });
      return rows.map((values) => ({ row: claimedRowOf(table, values, true), token }));
    } catch (error) {
      await rollbackAndRelease(connection, error, guard).catch(() => undefined);
      throw normalizeError(error, { table: table.name, operation: "lease claim" });
    }
  }

  /**
   * Moves every held lease still holding its token to `expiry` in one statement, reading back which
   * rows hold it when it matched fewer than all; a lost connection runs it once more (DRIVERS.md,
   * "Lease form"). A row held under two tokens is extended in a second statement.
   */
  async extend(
    held: readonly { readonly id: RowId; readonly token: LeaseToken }[],
    expiry: Date,
  ): Promise<readonly (LeaseToken | null)[]> {
    const next: LeaseToken = Object.freeze({ form: "lease", expiry });
    const moved = held.map(() => false);
    const movedIds = new Set<string>();
    let left = held.map((row, index) => ({ ...row, index }));
    try {
      while (left.length > 0) {
        const ids = new Set<string>();
        const round: typeof left = [];
        const later: typeof left = [];
        for (const row of left) {
          const key = rowIdKey(row.id);
          if (movedIds.has(key)) continue;
          if (ids.has(key)) later.push(row);
          else {
            ids.add(key);
            round.push(row);
          }
        }
        const flags = await this.#extendOnce(round, expiry).catch((error: unknown) => {
          if (!classifyError(error).connectionLost) throw error;
          return this.#extendOnce(round, expiry);
        });
        round.forEach((row, position) => {
          if (flags[position] !== true) return;
          moved[row.index] = true;
          movedIds.add(rowIdKey(row.id));
        });
        left = later;
      }
    } catch (error) {
      throw normalizeError(error, { table: this.#context.table.name, operation: "lease extension" });
    }
    return moved.map((flag) => (flag ? next : null));
  }

  /** Per row, whether it holds `expiry` after the extension statement (and, when it matched fewer than all, the read back). */
  async #extendOnce(
    rows: readonly { readonly id: RowId; readonly token: LeaseToken }[],
    expiry: Date,
  ): Promise<boolean[]> {
    const { pool, statements } = this.#context;
    const connection = await pool.getConnection();
    let broken = false;
    try {
      const bound = statements.leaseExtend(
        rows.map(({ id, token }) => ({ id, token: token.expiry })),
        expiry,
      );
      const matched = await withDeadlockRetry(async () =>
        matchedRows(await run(connection, bound.sql, bound.values)),
      );
      if (matched === rows.length) return allHeld(rows);
      const read = statements.leaseHolding(
        rows.map(({ id }) => id),
        expiry,
      );
      return heldAmong(rows, await selectRows(connection, read.sql, read.values), (row) => row[0]);
    } catch (error) {
      broken = classifyError(error).connectionLost;
      throw error;
    } finally {
      letGo(connection, broken);
    }
  }

  async settle(id: RowId, token: LeaseToken, settlement: Settlement): Promise<void> {
    const { pool, table } = this.#context;
    let matched: number;
    try {
      if (settlement.kind === "moveToTable") {
        const connection = await pool.getConnection();
        let broken = false;
        try {
          matched = await withDeadlockRetry(() =>
            applySettlement(connection, this.#settlements, settlement, id, token.expiry, "autocommit"),
          );
        } catch (error) {
          broken = true;
          throw error;
        } finally {
          letGo(connection, broken);
        }
      } else {
        matched = await withDeadlockRetry(() =>
          applySettlement(pool, this.#settlements, settlement, id, token.expiry, "autocommit"),
        );
      }
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: `lease ${settlement.kind}` });
    }
    if (matched === 0) throw leaseLostOnSettle(table.name, id, token.expiry, settlement.kind);
  }

  /**
   * Coalesced acknowledgement, one commit. A delete on MariaDB: `deleteManyReturning`, one round
   * trip. Elsewhere one transaction: the fenced statement, COMMIT when it matched every row; else
   * ROLLBACK, then the rows still holding their tokens read `FOR UPDATE`, settled, and COMMIT.
   */
  async settleMany({ rows: held, settlement }: Acks<HeldLease>): Promise<readonly boolean[]> {
    if (held.length === 0) return [];
    const { table, family } = this.#context;
    const rows = held.map(({ id, token }) => ({ id, token: token.expiry }));
    let settled: readonly boolean[] | "all";
    try {
      settled = await withDeadlockRetry(async () => {
        if (family === "mariadb" && settlement.kind === "delete") return this.#deleteManyReturning(rows);
        return this.#settleManyInTransaction(rows, settlement);
      });
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: `lease ${settlement.kind} (coalesced)` });
    }
    return settled === "all" ? allHeld(held) : settled;
  }

  /** MariaDB's coalesced delete (`deleteManyReturning`): per row of `rows`, whether it was deleted. */
  async #deleteManyReturning(
    rows: readonly { readonly id: RowId; readonly token: Date }[],
  ): Promise<boolean[]> {
    const bound = this.#settlements.deleteManyReturning(rows);
    const results: unknown[] = await selectRows(this.#context.pool, bound.sql, bound.values);
    const sets = results.filter((result): result is unknown[] => Array.isArray(result));
    if (sets.length !== rows.length) {
      throw new Error(
        `Internal: a coalesced delete of ${rows.length} rows answered ${sets.length} result sets.`,
      );
    }
    return sets.map((set) => set.length > 0);
  }

  /** The transaction of {@link MysqlLeaseClaimer.settleMany}: `"all"`, or per row whether it settled it. */
  async #settleManyInTransaction(
    rows: readonly { readonly id: RowId; readonly token: Date }[],
    settlement: AckSettlement,
  ): Promise<readonly boolean[] | "all"> {
    const connection = await this.#context.pool.getConnection();
    try {
      await run(connection, transactionSql.begin);
      const bound = this.#settlements.ackMany(settlement, rows, this.#context.family);
      if (matchedRows(await run(connection, bound.sql, bound.values)) === rows.length) {
        await commitAndRelease(connection);
        return "all";
      }
      await run(connection, transactionSql.rollback);
      await run(connection, transactionSql.begin);
      const lock = this.#settlements.lockHeld(rows);
      const ids = (await selectRows(connection, lock.sql, lock.values)).map((row) => row[0]);
      const still = new Set(ids.map(rowIdKey));
      const holding = rows.filter((row) => still.has(rowIdKey(row.id)));
      if (holding.length > 0) {
        const again = this.#settlements.ackMany(settlement, holding, this.#context.family);
        await run(connection, again.sql, again.values);
      }
      await commitAndRelease(connection);
      return heldAmongOnce(rows, ids);
    } catch (error) {
      await rollbackAndRelease(connection, error).catch(() => undefined);
      throw error;
    }
  }

  /** Transactional handlers: the body and the fenced settlement in one transaction (`src/transactional.ts`). */
  transaction(
    id: RowId,
    work: TransactionWork,
    fence: () => Promise<LeaseToken>,
    signal: AbortSignal,
  ): Promise<void> {
    const { pool, table } = this.#context;
    return leaseTransaction(pool, this.#settlements, table, id, work, fence, signal);
  }

  async close(): Promise<void> {}
}
