/**
 * The advisory lock form on MySQL/MariaDB. A claim selects claimable rows in claim order with
 * their lock names, leaving out names another session holds (`IS_USED_LOCK(name) IS NULL`), and
 * more of them than it needs (those it does not try serve the next claims for a moment, see
 * {@link SPARE_CANDIDATES_MS}). For each distinct name it checks a connection out of the pool and
 * runs `GET_LOCK(name, 0)` (the names a claim needs side by side, each on its own connection),
 * which never waits: 0 releases the connection and passes over; 1 takes
 * the row while it is still claimable (`attempt + 1`, then reads it), or unlocks and passes over
 * when it no longer is. The connection, holding the lock, stays with the delivery: the settlement
 * runs on it, then `RELEASE_LOCK(name)` (an ack that deletes the row: one statement that deletes
 * and releases, see `#settleAndUnlock`); a release the server does not confirm closes the
 * connection. A key belongs to the server, not the table: two tables whose keys match wait for
 * each other. The lock name is built in one place, `lockNameExpression` in `sql.ts`.
 *
 * With a per-key limit n above 1 (`advisoryLock: { key, limit }`), the candidates carry the full
 * key and leave out keys whose n slots are all used; a claim tries up to n rows a key, each with
 * one `SELECT CASE` that takes the row's own lock and then the first free slot, never waiting
 * (`slotLockSql`); the delivery holds both, released together after the settlement.
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
import {
  type Bound,
  lockNameOf,
  lockSql,
  releaseSlotSql,
  type SettlementStatements,
  slotLockSql,
} from "./sql.js";
import { advisoryTransaction, bodyRunning } from "./transactional.js";

/** The advisory token: the connection holding the lock and the lock name (which `key` also holds). */
export interface MysqlAdvisoryToken extends AdvisoryToken {
  readonly connection: ConnectionLike;
  /** The `GET_LOCK` name: database, `.`, key (a limit above 1: the slot's key); or its SHA-256 past 64 characters. */
  readonly lockName: string;
  /** With a limit above 1: the `GET_LOCK` name of the row's own lock, held beside the slot. */
  readonly rowLockName?: string;
}

/** How many more candidates than `limit` a claim reads, so that names taken meanwhile can be passed over. */
const candidateFactor = 3;

/**
 * How long candidates a claim read but did not try serve the next claims, in milliseconds. A row
 * published meanwhile ahead of them in claim order waits at most this long (or until they are
 * used); the next claims save their candidate read (one round trip a claim).
 */
export const SPARE_CANDIDATES_MS = 250;

/** The lock name of a candidate row read as an array (id, name). */
function lockNameOfRow(row: readonly unknown[]): string {
  return String(row[1]);
}

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
   * Candidates a claim read and did not try (names it did not need), in claim order, kept for
   * the next claim for {@link SPARE_CANDIDATES_MS}: a claim that finds them skips its candidate
   * read. Using a stale one is safe (the take checks the row is still claimable, under its lock)
   * and costs only the round trips of the try. A settlement other than an ack (a retry makes its
   * row due again, ahead of them), a release and a transactional handler drop them.
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
      const next = end.next;
      if (claimed.length >= limit || fresh) {
        this.#keepSpares(candidates.slice(next));
        return claimed;
      }
      // The spares ran out before the claim was full: read candidates afresh, once.
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
    // One candidate per name; with a limit n above 1, the first n of each full key (one per slot).
    return firstRowsPerKey(rows, table.advisoryLimit, rows.length, lockNameOfRow, (row, lockName) => ({
      id: row[0] as RowId,
      lockName,
    }));
  }

  /** The spares, if read recently enough, handed to one claim (a claim running beside it reads its own). */
  #takeSpares(): { id: RowId; lockName: string }[] {
    const spares = this.#spares;
    this.#spares = [];
    return Date.now() - this.#sparesReadAt <= SPARE_CANDIDATES_MS ? spares : [];
  }

  #keepSpares(spares: { id: RowId; lockName: string }[]): void {
    if (spares.length > 0) this.#spares = spares;
  }

  /**
   * Locks `lockName` on a connection of its own (a limit above 1: the row's lock and a free slot
   * of the full key `lockName`, see {@link slotLockSql}) and takes row `id` while it is still
   * claimable; `null` to pass over.
   */
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
          await unlock(connection, rowName);
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
      // Closing the session drops its lock with it.
      letGo(connection, locked || classifyError(error).connectionLost);
      throw error;
    }
  }

  async settle(token: MysqlAdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    if (!isAckSettlement(settlement)) this.#spares = [];
    const unlocking = this.#unlockingStatement(settlement, row.id, token.lockName);
    if (unlocking !== null) return this.#settleAndUnlock(token, row, settlement, unlocking);
    let matched: number;
    try {
      matched = await applySettlement(
        token.connection,
        this.#settlements,
        settlement,
        row.id,
        undefined,
        "autocommit",
      );
    } catch (error) {
      // The lock goes with the session: close it rather than leave the key held.
      letGo(token.connection, true);
      throw normalizeError(error, {
        table: this.#context.table.name,
        operation: `advisory ${settlement.kind}`,
      });
    }
    await unlockHeld(token.connection, token);
    if (matched === 0)
      throw advisoryRowGone(this.#context.table.name, row.id, token.lockName, settlement.kind);
  }

  /**
   * The one statement that settles and unlocks together, where that is safe: a delete (an ack on
   * a table without processedAt) on a table with an attempt column (every take of a row is then
   * a locking `UPDATE`). Elsewhere the settlement and `RELEASE_LOCK` are two statements.
   */
  #unlockingStatement(settlement: Settlement, id: RowId, lockName: string): Bound | null {
    const { table } = this.#context;
    // A limit above 1 holds two locks: the settlement runs on its own, then both are released.
    if (table.advisoryLimit > 1) return null;
    if (table.columns.attempt === undefined || settlement.kind !== "delete") return null;
    return this.#settlements.deleteAndUnlock(id, lockName);
  }

  /**
   * Delete and unlock in one round trip (`SettlementStatements.deleteAndUnlock`). Safe because
   * the statement releases the lock only after it found and write-locked the row, and holds that
   * row lock until it commits (autocommit: at the statement's end): a session that takes the lock
   * in between takes a row only through a locking `UPDATE … WHERE id = ? AND <claimable>` (the
   * advisory take, on a table with an attempt column), which waits for the row lock and then
   * finds the row deleted, so it passes over it. The candidates' plain read may still list the
   * row: it only proposes names, and the take decides.
   * When the statement matches nothing the lock may still be held: it is released on its own, and
   * a release that fails closes the session (which drops the lock).
   */
  async #settleAndUnlock(
    token: MysqlAdvisoryToken,
    row: ClaimedRow,
    settlement: Settlement,
    statement: Bound,
  ): Promise<void> {
    let matched: number;
    try {
      matched = matchedRows(await run(token.connection, statement.sql, statement.values));
    } catch (error) {
      // The lock goes with the session: close it rather than leave the key held.
      letGo(token.connection, true);
      throw normalizeError(error, {
        table: this.#context.table.name,
        operation: `advisory ${settlement.kind}`,
      });
    }
    if (matched > 0) {
      letGo(token.connection, false);
      return;
    }
    await unlock(token.connection, token.lockName);
    throw advisoryRowGone(this.#context.table.name, row.id, token.lockName, settlement.kind);
  }

  release(token: MysqlAdvisoryToken): Promise<void> {
    // The row stays due, ahead of the spares in claim order.
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
    // The body may settle the row as a retry: the spares may no longer be first in claim order.
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
 * `RELEASE_LOCK(name)`, then returns the connection to its pool; a release that does not return
 * 1 (or fails) closes the connection instead, which drops any lock it still holds.
 */
/**
 * Releases what a delivery holds: its lock name, or (a limit above 1) its slot's and its row's
 * (`RELEASE_LOCK` of each, one statement), then returns the connection; a release not confirmed
 * for both closes the connection instead.
 */
async function unlockHeld(
  connection: ConnectionLike,
  held: { readonly lockName: string; readonly rowLockName?: string | undefined },
): Promise<void> {
  if (held.rowLockName === undefined) return unlock(connection, held.lockName);
  let released = false;
  try {
    const rows = await selectRows(connection, releaseSlotSql, [held.lockName, held.rowLockName]);
    released = Number(rows[0]?.[0]) === 2;
  } catch {
    released = false;
  }
  letGo(connection, !released);
}

async function unlock(connection: ConnectionLike, lockName: string): Promise<void> {
  let released = false;
  try {
    const rows = await selectRows(connection, lockSql.release, [lockName]);
    released = Number(rows[0]?.[0]) === 1;
  } catch {
    released = false;
  }
  letGo(connection, !released);
}
