/**
 * The advisory lock form: select due rows with their rendered keys, leaving out keys any session
 * holds (this process's own included, as `pg_locks` shows them); for each key, on a connection
 * of its own, try `pg_try_advisory_lock(hashtextextended(key, 0))` without waiting and, in the
 * same statement, take the row while it is still claimable (counting the attempt); pass over
 * keys held elsewhere. The keys a claim needs are tried side by side, one statement on each of
 * their connections at once, so a claim of n rows costs one round trip, not 2n in a row. The connection holds the key's lock until the delivery settles on it and unlocks.
 * The lock lives in the session: the form needs a direct connection or a pooler in session mode.
 *
 * @module
 */
import type {
  AdvisoryClaimer,
  AdvisoryToken,
  Claimed,
  ClaimedRow,
  ClaimRequest,
  Logger,
  Settlement,
  TableDefinition,
  TransactionWork,
} from "@rowclaim/core";
import { LeaseLostError } from "@rowclaim/core";
import { decodeClaimedRow } from "./claimed-row.js";
import { execute, HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import type { Settlements } from "./settle.js";
import {
  ADVISORY_LOCKED_ALIAS,
  ADVISORY_WINDOW_FACTOR,
  advisoryKeyValues,
  advisoryUnlock,
  type Statement,
} from "./sql.js";
import { advisoryTransaction, bodyRunning } from "./transactional.js";

/** How long a claim that already took rows waits for one more connection before it stops taking. */
const ACQUIRE_WAIT_MS = 50;

/**
 * Checks a connection out if the pool hands one over within `ms`; otherwise `undefined`, and a
 * connection that arrives later goes straight back to the pool.
 */
async function acquireWithin(pool: PoolLike, ms: number): Promise<HeldConnection | undefined> {
  const pending = HeldConnection.acquire(pool);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  const winner = await Promise.race([pending, timedOut]);
  clearTimeout(timer);
  if (winner === undefined) {
    pending.then(
      (late) => late.release(),
      () => undefined,
    );
  }
  return winner;
}

/** An advisory delivery's token: the key and the connection (session) that holds its lock. */
export interface PostgresAdvisoryToken extends AdvisoryToken {
  readonly connection: HeldConnection;
}

/** What an advisory claimer is built from (statements built once, at open). */
export interface AdvisoryClaimerOptions {
  readonly pool: PoolLike;
  readonly table: TableDefinition;
  readonly group: string | null;
  readonly candidates: Statement;
  readonly take: Statement;
  readonly settlements: Settlements;
  readonly logger: Logger;
}

/** The advisory lock claimer of one subscription. */
export class PostgresAdvisoryClaimer implements AdvisoryClaimer<PostgresAdvisoryToken> {
  readonly form = "advisory" as const;
  readonly #options: AdvisoryClaimerOptions;
  readonly #keyValues: Record<string, string>;

  constructor(options: AdvisoryClaimerOptions) {
    this.#options = options;
    this.#keyValues = advisoryKeyValues(options.table);
  }

  async claim(request: ClaimRequest): Promise<readonly Claimed<PostgresAdvisoryToken>[]> {
    const { pool, table, group, candidates } = this.#options;
    let found: Record<string, unknown>[];
    try {
      const result = await execute(pool, candidates, {
        ...this.#keyValues,
        now: request.now,
        group,
        window: request.limit * ADVISORY_WINDOW_FACTOR + 100,
        limit: request.limit * 4 + 8,
      });
      found = result.rows;
    } catch (error) {
      throw normalizeError(error, { table: table.name, form: "advisory lock", statement: "advisory claim" });
    }
    const taken: Claimed<PostgresAdvisoryToken>[] = [];
    let next = 0;
    // Waves of lock-and-take statements, each on a connection of its own, run side by side: as
    // many as rows are still wanted, until enough are taken or the candidates run out.
    while (taken.length < request.limit && next < found.length) {
      const wave = found.slice(next, next + request.limit - taken.length);
      next += wave.length;
      const first = taken.length === 0;
      const outcomes = await Promise.allSettled(
        wave.map((candidate, index) => this.#lockAndTake(candidate, request.now, first && index === 0)),
      );
      let failure: unknown;
      let starved = false;
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") failure ??= outcome.reason;
        else if (outcome.value === "starved") starved = true;
        else if (outcome.value !== null) taken.push(outcome.value);
      }
      if (failure !== undefined) {
        if (taken.length === 0)
          throw normalizeError(failure, {
            table: table.name,
            form: "advisory lock",
            statement: "advisory take",
          });
        this.#options.logger.error(
          `Table "${table.name}" (advisory lock form): taking a row failed; keeping the rows already taken.`,
          { error: failure },
        );
        break;
      }
      if (starved) break;
    }
    return taken;
  }

  /**
   * Locks a candidate's key and takes its row in one statement, on a connection of its own:
   * the claim, or `null` when the key is held elsewhere or the row is no longer claimable (its
   * lock given back), or `"starved"` when the pool had no connection to spare within
   * {@link ACQUIRE_WAIT_MS} (only `wait` waits for one: holding taken rows while waiting for a
   * connection could starve the pool).
   */
  async #lockAndTake(
    candidate: Record<string, unknown>,
    now: Date,
    wait: boolean,
  ): Promise<Claimed<PostgresAdvisoryToken> | null | "starved"> {
    const { pool, table, group, take } = this.#options;
    const key = String(candidate.rc_key ?? "");
    const connection = wait ? await HeldConnection.acquire(pool) : await acquireWithin(pool, ACQUIRE_WAIT_MS);
    if (connection === undefined) return "starved";
    let locked = false;
    try {
      const result = await connection.run(take, { ...this.#keyValues, id: candidate.rc_id, key, now, group });
      const raw = result.rows[0];
      locked = raw?.[ADVISORY_LOCKED_ALIAS] === true;
      if (!locked) {
        connection.release();
        return null;
      }
      if (raw === undefined || raw[table.columns.id] === null || raw[table.columns.id] === undefined) {
        await this.#unlockAndRelease(connection, key);
        return null;
      }
      const row = decodeClaimedRow(table, raw, table.columns.attempt !== undefined);
      return { row, token: { form: "advisory", key, connection } };
    } catch (error) {
      if (!connection.released) {
        // A statement that failed may or may not have taken the lock: end the session to be sure.
        connection.markBroken(error instanceof Error ? error : new Error(String(error)));
        connection.release();
      }
      throw error;
    }
  }

  async settle(token: PostgresAdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    let failure: unknown;
    try {
      const changed = await this.#options.settlements.apply(token.connection, row.id, settlement);
      if (changed === 0) {
        failure = new LeaseLostError(
          `Table "${this.#options.table.name}" (advisory lock form): the ${settlement.kind} settlement of row ${String(row.id)} found the row gone or finished while its key "${token.key}" was held (deleted or settled by hand?); it changed nothing.`,
          { table: this.#options.table.name },
        );
      }
    } catch (error) {
      failure = normalizeError(error, {
        table: this.#options.table.name,
        form: "advisory lock",
        statement: `${settlement.kind} settlement`,
      });
    }
    try {
      await this.#unlockAndRelease(token.connection, token.key);
    } catch (error) {
      failure ??= error;
    }
    if (failure !== undefined) throw failure;
  }

  async release(token: PostgresAdvisoryToken): Promise<void> {
    await this.#unlockAndRelease(token.connection, token.key);
  }

  /** Transactional handlers: the body and its settlement in one transaction on the key's session (`src/transactional.ts`). */
  transaction(token: PostgresAdvisoryToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    const { settlements, table } = this.#options;
    return advisoryTransaction(token.connection, settlements, table, row.id, token.key, work, () =>
      this.#unlockAndRelease(token.connection, token.key),
    );
  }

  async close(): Promise<void> {}

  /**
   * Unlocks the key and returns the connection. An unlock the server does not confirm (or a
   * broken connection) destroys the connection instead, which ends the session and its locks.
   */
  async #unlockAndRelease(connection: HeldConnection, key: string): Promise<void> {
    if (connection.released) return;
    // A transactional body still running on it: end the session (and the lock with it), so the
    // body's next statement fails instead of running outside the transaction.
    if (bodyRunning(connection))
      connection.markBroken(new Error("rowclaim: given up during a transactional body"));
    if (connection.broken !== undefined) {
      connection.release();
      return;
    }
    try {
      const result = await connection.run(advisoryUnlock, { key });
      if (result.rows[0]?.unlocked !== true) {
        connection.markBroken(
          new Error(
            `rowclaim/postgres: table "${this.#options.table.name}": the advisory unlock of key "${key}" was not confirmed; closing the session.`,
          ),
        );
      }
    } catch (error) {
      connection.markBroken(error instanceof Error ? error : new Error(String(error)));
    } finally {
      connection.release();
    }
  }
}
