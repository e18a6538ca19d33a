/**
 * The lease form on MySQL/MariaDB. A claim is one short transaction at READ COMMITTED (unless the
 * table names a level): a locking select of due rows (`FOR UPDATE SKIP LOCKED`, claim order,
 * LIMIT) that reads the rows whole, one UPDATE of those rows writing the host's expiry into
 * lockedUntil and `attempt + 1`, then COMMIT: the handler runs with no connection held. Neither
 * MySQL nor MariaDB 10.11 has `UPDATE … RETURNING`; the claim does not read the rows back but
 * writes the update's two values into the rows it selected (a FIFO head is read back). Extensions and settlements apply only
 * `WHERE id = ? AND lockedUntil = <token>`; a settlement that matches no row fails with
 * `LEASE_LOST` and changes nothing.
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
  type TransactionWork,
} from "@rowclaim/core";
import { toClaimedRow } from "./claimed-row.js";
import type { ClaimerContext } from "./claimer-context.js";
import { letGo, matchedRows, run, selectRows } from "./client.js";
import { fifoGuardRelease, LEASE_GUARD_WAIT_SECONDS, leaseFifoHead, takeFifoGuard } from "./fifo.js";
import { classifyError, normalizeError } from "./normalize-error.js";
import { withDeadlockRetry } from "./retry.js";
import { applySettlement } from "./settle.js";
import type { SettlementStatements } from "./sql.js";
import { beginAt, commitAndRelease, rollbackAndRelease, type SessionLockRelease } from "./transaction.js";
import { leaseTransaction } from "./transactional.js";

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
    return withDeadlockRetry(() => this.#claimOnce(request));
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
      // Rows read whole by the locking select (not FIFO); FIFO reads its head back after the update.
      let selected: unknown[][] | undefined;
      if (table.fifo) {
        // The group's guard, held only while this claim commits: another claim of the group waits.
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
        // The rows as the update left them, without reading them back: the expiry, attempt + 1.
        rows = selected.map((values) => takenValues(values, expiry));
      }
      await commitAndRelease(connection, guard);
      const token: LeaseToken = Object.freeze({ form: "lease", expiry });
      return rows.map((values) => ({ row: toClaimedRow(table, values, 1), token }));
    } catch (error) {
      await rollbackAndRelease(connection, error, guard).catch(() => undefined);
      throw normalizeError(error, { table: table.name, operation: "lease claim" });
    }
  }

  async extend(
    held: readonly { readonly id: RowId; readonly token: LeaseToken }[],
    expiry: Date,
  ): Promise<readonly (LeaseToken | null)[]> {
    const { pool, statements, table } = this.#context;
    const connection = await pool.getConnection();
    let broken = false;
    try {
      const next: LeaseToken = Object.freeze({ form: "lease", expiry });
      const tokens: (LeaseToken | null)[] = [];
      for (const { id, token } of held) {
        const bound = statements.leaseExtend(id, token.expiry, expiry);
        const matched = await withDeadlockRetry(async () =>
          matchedRows(await run(connection, bound.sql, bound.values)),
        );
        tokens.push(matched === 0 ? null : next);
      }
      return tokens;
    } catch (error) {
      broken = classifyError(error).connectionLost;
      throw normalizeError(error, { table: table.name, operation: "lease extension" });
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
    if (matched === 0) {
      throw new LeaseLostError(
        `Table "${table.name}" (lease form): row ${String(id)} no longer holds this delivery's lease (expiry ${token.expiry.toISOString()}), so its ${settlement.kind} changed nothing: the lease ran out and another claim took the row, or the row is gone. Make the lease longer than the handler can stall, or keep lease extension on.`,
        { table: table.name },
      );
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
