/**
 * The advisory lock form: select due rows with their rendered keys; for each key, on a
 * connection of its own, try `pg_try_advisory_lock(hashtextextended(key, 0))` without waiting;
 * pass over keys held elsewhere; take the row while it is still claimable (counting the
 * attempt). The connection holds the key's lock until the delivery settles on it and unlocks.
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
  ADVISORY_WINDOW_FACTOR,
  advisoryKeyValues,
  advisoryUnlock,
  type Statement,
  tryAdvisoryLock,
} from "./sql.js";
import { advisoryTransaction } from "./transactional.js";

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
    const { pool, table, group, candidates, take } = this.#options;
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
    for (const candidate of found) {
      if (taken.length >= request.limit) break;
      const key = String(candidate.rc_key ?? "");
      let connection: HeldConnection | undefined;
      let locked = false;
      try {
        if (taken.length === 0) {
          connection = await HeldConnection.acquire(pool);
        } else {
          // Holding taken rows while waiting for a connection could starve the pool: take no more.
          connection = await acquireWithin(pool, ACQUIRE_WAIT_MS);
          if (connection === undefined) break;
        }
        const lock = await connection.run(tryAdvisoryLock, { key });
        locked = lock.rows[0]?.locked === true;
        if (!locked) {
          connection.release();
          continue;
        }
        const result = await connection.run(take, {
          ...this.#keyValues,
          id: candidate.rc_id,
          key,
          now: request.now,
          group,
        });
        const raw = result.rows[0];
        if (raw === undefined) {
          await this.#unlockAndRelease(connection, key);
          continue;
        }
        const row = decodeClaimedRow(table, raw, table.columns.attempt !== undefined);
        taken.push({ row, token: { form: "advisory", key, connection } });
      } catch (error) {
        if (connection !== undefined && !connection.released) {
          if (locked) await this.#unlockAndRelease(connection, key).catch(() => undefined);
          else connection.release();
        }
        if (taken.length > 0) {
          this.#options.logger.error(
            `Table "${table.name}" (advisory lock form): taking a row failed; keeping the rows already taken.`,
            {
              error,
            },
          );
          break;
        }
        throw normalizeError(error, { table: table.name, form: "advisory lock", statement: "advisory take" });
      }
    }
    return taken;
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
