/**
 * The advisory lock form on MySQL/MariaDB (DRIVERS.md, "Advisory lock form"): candidates whose
 * names are free, then per name, on a connection of its own, `GET_LOCK(name, 0)` and the take; the
 * connection stays with the delivery until the settlement and `RELEASE_LOCK`. With a per-key limit
 * above 1, one `SELECT CASE` takes the row's own lock and a free slot (`slotLockSql`).
 *
 * @module
 */
import type { RowId } from "@rowclaim/core";
import type {
  AdvisoryClaimer,
  AdvisoryToken,
  Claimed,
  ClaimedRow,
  ClaimRequest,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import {
  advisoryRowGone,
  advisoryRowKey,
  advisorySlotKey,
  bodyRunning,
  firstRowsPerKey,
  isAckSettlement,
  keepTakenOnFailure,
  takeInWaves,
} from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import type { ClaimerContext } from "./claimer-context.js";
import { classifyError, normalizeError } from "./normalize-error.js";
import { type ConnectionLike, letGo, matchedRows, run, selectRows } from "./pool-like.js";
import { withDeadlockRetry } from "./retry.js";
import { applySettlement } from "./settle.js";
import { lockNameOf, lockSql, releaseSlotSql, type SettlementStatements, slotLockSql } from "./sql.js";
import { advisoryTransaction } from "./transactional.js";

/** The advisory token: the connection holding the lock and the lock name (which `key` also holds). */
export interface MysqlAdvisoryToken extends AdvisoryToken {
  readonly connection: ConnectionLike;
  /** The `GET_LOCK` name (a limit above 1: the slot's). */
  readonly lockName: string;
  /** With a limit above 1: the `GET_LOCK` name of the row's own lock, held beside the slot. */
  readonly rowLockName?: string;
}

/** How many more candidates than `limit` a claim reads, so that names taken meanwhile can be passed over. */
const candidateFactor = 3;

/** How long candidates a claim read but did not try serve the next claims (saving their read), in milliseconds. */
export const SPARE_CANDIDATES_MS = 250;

/** The advisory lock claimer of one subscription. */
export class MysqlAdvisoryClaimer implements AdvisoryClaimer<MysqlAdvisoryToken> {
  readonly form = "advisory" as const;
  readonly #context: ClaimerContext;
  readonly #settlements: SettlementStatements;

  constructor(context: ClaimerContext) {
    this.#context = context;
    this.#settlements = context.statements.settlements({
      countAttempt: false,
      tokenGuard: false,
      unfinishedGuard: true,
    });
  }

  /**
   * Candidates a claim did not try, kept for {@link SPARE_CANDIDATES_MS} (a stale one is safe: the
   * take checks the row). Anything that may make a row due ahead of them drops them.
   */
  #spares: { id: RowId; lockName: string }[] = [];
  #sparesReadAt = 0;

  async claim({ limit, now }: ClaimRequest): Promise<readonly Claimed<MysqlAdvisoryToken>[]> {
    const { table, logger } = this.#context;
    const claimed: Claimed<MysqlAdvisoryToken>[] = [];
    let candidates = this.#takeSpares();
    let fresh = candidates.length === 0;
    if (fresh) candidates = await this.#readCandidates(now, limit);
    for (;;) {
      const end = await takeInWaves(candidates, 0, limit, claimed, ({ id, lockName }) =>
        this.#take(id, lockName, now),
      );
      if (end.stopped === "failed") {
        const normalized = normalizeError(end.failure, { table: table.name, operation: "advisory claim" });
        keepTakenOnFailure(logger, table.name, "taking a row", claimed.length, normalized);
        return claimed;
      }
      if (claimed.length >= limit || fresh) {
        if (end.next < candidates.length) this.#spares = candidates.slice(end.next);
        return claimed;
      }
      fresh = true;
      try {
        candidates = await this.#readCandidates(now, limit);
      } catch (error) {
        keepTakenOnFailure(logger, table.name, "reading more candidates", claimed.length, error);
        return claimed;
      }
    }
  }

  /** Claimable rows in claim order whose names are free, one per name: `limit` × 3 + 1 read. */
  async #readCandidates(now: Date, limit: number): Promise<{ id: RowId; lockName: string }[]> {
    const { pool, table, statements } = this.#context;
    let rows: unknown[][];
    try {
      const select = statements.advisoryCandidates(now, limit * candidateFactor + 1);
      rows = await selectRows(pool, select.sql, select.values);
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "advisory claim" });
    }
    this.#sparesReadAt = Date.now();
    return firstRowsPerKey(
      rows,
      table.advisoryLimit,
      rows.length,
      (row) => String(row[1]),
      (row, lockName) => ({ id: row[0] as RowId, lockName }),
    );
  }

  /** The spares, if read recently enough, handed to one claim (a claim running beside it reads its own). */
  #takeSpares(): { id: RowId; lockName: string }[] {
    const spares = this.#spares;
    this.#spares = [];
    return Date.now() - this.#sparesReadAt <= SPARE_CANDIDATES_MS ? spares : [];
  }

  /** Locks the candidate's name (or its row's lock and a free slot) on a connection of its own and takes row `id`; `null` to pass over. */
  async #take(id: RowId, candidateName: string, now: Date): Promise<Claimed<MysqlAdvisoryToken> | null> {
    const { pool, table, statements } = this.#context;
    const connection = await pool.getConnection();
    let locked = false;
    let lockName = candidateName;
    let rowLockName: string | undefined;
    try {
      if (table.advisoryLimit === 1) {
        const got = await selectRows(connection, lockSql.get, [lockName]);
        if (Number(got[0]?.[0]) !== 1) {
          letGo(connection, false);
          return null;
        }
      } else {
        const limit = table.advisoryLimit;
        const rowName = lockNameOf(advisoryRowKey(candidateName, String(id)));
        const slotNames = Array.from({ length: limit }, (_, index) =>
          lockNameOf(advisorySlotKey(candidateName, index + 1, limit)),
        );
        // A failure part way may leave a lock held: the catch below then closes the session.
        locked = true;
        const got = await selectRows(connection, slotLockSql(limit), [rowName, ...slotNames]);
        const slot = Number(got[0]?.[0]);
        if (slot === -1) {
          await unlockHeld(connection, { lockName: rowName });
          return null;
        }
        if (!(slot >= 1 && slot <= limit)) {
          letGo(connection, false);
          return null;
        }
        lockName = slotNames[slot - 1] ?? "";
        rowLockName = rowName;
      }
      locked = true;
      const held = { lockName, ...(rowLockName === undefined ? {} : { rowLockName }) };
      const take = statements.advisoryTake(id, now);
      if (take !== null) {
        const matched = await withDeadlockRetry(async () =>
          matchedRows(await run(connection, take.sql, take.values)),
        );
        if (matched === 0) {
          await unlockHeld(connection, held);
          return null;
        }
      }
      const read = statements.advisoryRead(id, now);
      const rows = await selectRows(connection, read.sql, read.values);
      const values = rows[0];
      if (values === undefined) {
        await unlockHeld(connection, held);
        return null;
      }
      const row = claimedRowOf(table, values, take !== null);
      return { row, token: Object.freeze({ form: "advisory", key: lockName, ...held, connection }) };
    } catch (error) {
      letGo(connection, locked || classifyError(error).connectionLost);
      throw error;
    }
  }

  /**
   * Settles on the lock's connection, then unlocks. A delete on a table with an attempt column
   * (every take then a locking `UPDATE`) with a limit of 1 deletes and unlocks in one statement
   * (`deleteAndUnlock`): the lock goes only after the statement write-locked the row, which it
   * holds until it commits, so a take that got the lock in between waits for it and finds the row
   * gone. A failed settlement closes the session, which drops the lock.
   */
  async settle(token: MysqlAdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    if (!isAckSettlement(settlement)) this.#spares = [];
    const { table } = this.#context;
    const together =
      table.advisoryLimit === 1 && table.columns.attempt !== undefined && settlement.kind === "delete";
    let matched: number;
    try {
      if (together) {
        const statement = this.#settlements.deleteAndUnlock(row.id, token.lockName);
        matched = matchedRows(await run(token.connection, statement.sql, statement.values));
      } else {
        matched = await applySettlement(
          token.connection,
          this.#settlements,
          settlement,
          row.id,
          undefined,
          "autocommit",
        );
      }
    } catch (error) {
      letGo(token.connection, true);
      throw normalizeError(error, { table: table.name, operation: `advisory ${settlement.kind}` });
    }
    if (together && matched > 0) letGo(token.connection, false);
    else await unlockHeld(token.connection, token);
    if (matched === 0) throw advisoryRowGone(table.name, row.id, token.lockName, settlement.kind);
  }

  release(token: MysqlAdvisoryToken): Promise<void> {
    this.#spares = [];
    // A transactional body still running on it: close the session (the lock goes with it).
    if (bodyRunning(token.connection)) {
      letGo(token.connection, true);
      return Promise.resolve();
    }
    return unlockHeld(token.connection, token);
  }

  /** Transactional handlers: the body and its settlement in one transaction on the lock's session (`src/transactional.ts`). */
  transaction(token: MysqlAdvisoryToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    this.#spares = [];
    const { table } = this.#context;
    return advisoryTransaction(token.connection, this.#settlements, table, row.id, token.key, work, () =>
      unlockHeld(token.connection, token),
    );
  }

  async close(): Promise<void> {
    this.#spares = [];
  }
}

/**
 * Releases what a delivery holds, its lock name (and, with a limit above 1, its row's lock, in one
 * statement), then returns the connection; a release not confirmed closes it, dropping its locks.
 */
async function unlockHeld(
  connection: ConnectionLike,
  held: { readonly lockName: string; readonly rowLockName?: string | undefined },
): Promise<void> {
  const { rowLockName } = held;
  let released = false;
  try {
    const rows =
      rowLockName === undefined
        ? await selectRows(connection, lockSql.release, [held.lockName])
        : await selectRows(connection, releaseSlotSql, [held.lockName, rowLockName]);
    released = Number(rows[0]?.[0]) === (rowLockName === undefined ? 1 : 2);
  } catch {}
  letGo(connection, !released);
}
