/**
 * The advisory lock form (DRIVERS.md, "Advisory lock form"): candidates with their rendered keys,
 * then per key, on a connection of its own and side by side, one statement that tries the key's
 * lock and takes the row. The connection holds the lock until the settle-and-unlock statement.
 *
 * @module
 */
import type { Logger, TableDefinition } from "@rowclaim/core";
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
  connectionWithin,
  KeyCounts,
  keepTakenOnFailure,
  runAdvisoryTransaction,
  type TakeOutcome,
  takeInWaves,
} from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import { HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import { type Settlements, settlementValues } from "./settle.js";
import {
  ADVISORY_CHANGED_ALIAS,
  ADVISORY_LOCKED_ALIAS,
  ADVISORY_SLOT_ALIAS,
  ADVISORY_UNLOCKED_ALIAS,
  type AdvisorySettleAndUnlockStatements,
  advisoryCandidateCount,
  advisoryKeyValues,
  advisorySlotUnlock,
  advisoryUnlock,
  advisoryWindow,
  type ClaimStatement,
  type Statement,
} from "./sql.js";
import { bodyRunning, dialectFor, releasedIfUnusable, sessionOf } from "./transactional.js";

/** After a claim met a key held by another session, how many claims read `pg_locks` at once. */
const LOCK_TABLE_READS_AFTER_REFUSAL = 32;

/** How long a claim that already took rows waits for one more connection before it stops taking. */
const ACQUIRE_WAIT_MS = 50;

/** An advisory delivery's token: the lock key (with a limit above 1, the slot's) and the session holding it. */
export interface PostgresAdvisoryToken extends AdvisoryToken {
  readonly connection: HeldConnection;
  /** The rendered key (what `key` is unless the table's limit is above 1). */
  readonly rendered: string;
  /** With a limit above 1: the row's own lock key (`advisoryRowKey`), held beside the slot. */
  readonly rowKey?: string;
}

/** What an advisory claimer is built from (statements built once, at open). */
export interface AdvisoryClaimerOptions {
  readonly pool: PoolLike;
  readonly table: TableDefinition;
  readonly group: string | null;
  /** Candidates passing over the keys any session holds (`pg_locks`). */
  readonly candidates: ClaimStatement;
  /** Candidates passing over the keys listed in `$held` (this claimer's own). */
  readonly candidatesHere: ClaimStatement;
  readonly take: Statement;
  readonly settlements: Settlements;
  /** Each settlement and the unlock as one statement (`advisorySettleAndUnlockSql`). */
  readonly settleAndUnlock: AdvisorySettleAndUnlockStatements;
  readonly logger: Logger;
}

/** The advisory lock claimer of one subscription. */
export class PostgresAdvisoryClaimer implements AdvisoryClaimer<PostgresAdvisoryToken> {
  readonly form = "advisory" as const;
  readonly #options: AdvisoryClaimerOptions;
  readonly #keyValues: Record<string, string>;
  /** The keys this claimer's deliveries hold (a count each), passed over by its first candidates read. */
  readonly #held = new KeyCounts();
  /** The keys this claimer is trying to lock right now, a count each (claims may run side by side). */
  readonly #taking = new KeyCounts();
  /** With a limit above 1: the rows this claimer's deliveries hold or its claims are taking (their row lock keys). */
  readonly #heldRows = new Set<string>();
  /** How many rows of one key may be in work at once (`advisoryLock.limit`). */
  readonly #limit: number;
  /** How many more claims read their candidates with the lock table (`pg_locks`) straight away. */
  #lockTableReads = 0;

  constructor(options: AdvisoryClaimerOptions) {
    this.#options = options;
    this.#keyValues = advisoryKeyValues(options.table);
    this.#limit = options.table.advisoryLimit;
  }

  /**
   * Claims up to `request.limit` rows: from candidates passing over this claimer's own keys, then,
   * after a refusal, from candidates passing over every key any session holds (`pg_locks`).
   */
  async claim(request: ClaimRequest): Promise<readonly Claimed<PostgresAdvisoryToken>[]> {
    const { candidates, candidatesHere } = this.#options;
    const taken: Claimed<PostgresAdvisoryToken>[] = [];
    if (this.#lockTableReads > 0) {
      this.#lockTableReads -= 1;
      await this.#takeFrom(candidates, {}, request, taken, false);
      return taken;
    }
    const first = await this.#takeFrom(
      candidatesHere,
      { held: this.#held.keysHeld(this.#limit) },
      request,
      taken,
      true,
    );
    if (first === "refused") {
      this.#lockTableReads = LOCK_TABLE_READS_AFTER_REFUSAL;
      if (taken.length < request.limit) await this.#takeFrom(candidates, {}, request, taken, false);
    }
    return taken;
  }

  /** Reads candidates with `claim` and takes them into `taken` (core's `takeInWaves`), saying how it ended. */
  async #takeFrom(
    claim: ClaimStatement,
    values: Record<string, unknown>,
    request: ClaimRequest,
    taken: Claimed<PostgresAdvisoryToken>[],
    stopOnRefusal: boolean,
  ): Promise<"refused" | "stopped" | "done"> {
    const { pool, table, group } = this.#options;
    let found: Record<string, unknown>[];
    // The read's connection takes the first candidate: one session serves a one-row claim.
    let reader: HeldConnection | undefined;
    try {
      reader = await HeldConnection.acquire(pool);
      const result = await reader.run(claim.forLimit(request.limit), {
        ...this.#keyValues,
        ...values,
        now: request.now,
        group,
        window: advisoryWindow(request.limit),
        limit: advisoryCandidateCount(request.limit),
      });
      found = result.rows;
    } catch (error) {
      reader?.release();
      const normalized = normalizeError(error, { table: table.name, operation: "advisory claim" });
      keepTakenOnFailure(
        this.#options.logger,
        table.name,
        "reading more candidates",
        taken.length,
        normalized,
      );
      return "stopped";
    }
    let spare: HeldConnection | undefined = reader;
    const end = await takeInWaves(
      found,
      0,
      request.limit,
      taken,
      (candidate, first) => {
        const connection = first ? spare : undefined;
        if (first) spare = undefined;
        return this.#lockAndTake(candidate, request.now, first, connection);
      },
      stopOnRefusal,
    );
    spare?.release();
    if (end.stopped === "failed") {
      const normalized = normalizeError(end.failure, { table: table.name, operation: "advisory take" });
      keepTakenOnFailure(this.#options.logger, table.name, "taking a row", taken.length, normalized);
    }
    if (end.stopped !== null) return "stopped";
    return end.refused ? "refused" : "done";
  }

  /**
   * Locks a candidate's key and takes its row on a connection of its own (`given`, or one waited
   * for only with `wait`, else `"starved"` past {@link ACQUIRE_WAIT_MS}).
   */
  async #lockAndTake(
    candidate: Record<string, unknown>,
    now: Date,
    wait: boolean,
    given: HeldConnection | undefined,
  ): Promise<TakeOutcome<Claimed<PostgresAdvisoryToken>>> {
    const key = String(candidate.rc_key ?? "");
    // A key whose slots this claimer fills itself, or a row it holds: not worth a round trip.
    const rowKey = this.#limit === 1 ? undefined : advisoryRowKey(key, String(candidate.rc_id));
    const busy = this.#held.count(key) + this.#taking.count(key);
    if (busy >= this.#limit || (rowKey !== undefined && this.#heldRows.has(rowKey))) {
      given?.release();
      return null;
    }
    this.#taking.add(key);
    // The row is held while it is taken, so that a claim running beside this one passes it over.
    if (rowKey !== undefined) this.#heldRows.add(rowKey);
    let taken: TakeOutcome<Claimed<PostgresAdvisoryToken>> = null;
    try {
      taken = await this.#lockAndTakeKey(candidate, key, rowKey, now, wait, given);
      return taken;
    } finally {
      if (rowKey !== undefined && (taken === null || typeof taken === "string"))
        this.#heldRows.delete(rowKey);
      this.#taking.remove(key);
    }
  }

  async #lockAndTakeKey(
    candidate: Record<string, unknown>,
    key: string,
    rowKey: string | undefined,
    now: Date,
    wait: boolean,
    given: HeldConnection | undefined,
  ): Promise<TakeOutcome<Claimed<PostgresAdvisoryToken>>> {
    const { pool, table, group, take } = this.#options;
    const connection =
      given ??
      (wait
        ? await HeldConnection.acquire(pool)
        : await connectionWithin(HeldConnection.acquire(pool), ACQUIRE_WAIT_MS, (late) => late.release()));
    if (connection === undefined) return "starved";
    let locked = false;
    try {
      const result = await connection.run(take, {
        ...this.#keyValues,
        id: candidate.rc_id,
        key,
        ...(rowKey === undefined ? {} : { rowKey }),
        now,
        group,
      });
      const raw = result.rows[0];
      locked = raw?.[ADVISORY_LOCKED_ALIAS] === true;
      if (!locked) {
        connection.release();
        return "refused";
      }
      const lockKey =
        rowKey === undefined ? key : advisorySlotKey(key, Number(raw?.[ADVISORY_SLOT_ALIAS]), this.#limit);
      const token: PostgresAdvisoryToken = {
        form: "advisory",
        key: lockKey,
        rendered: key,
        connection,
        ...(rowKey === undefined ? {} : { rowKey }),
      };
      if (raw === undefined || raw[table.columns.id] === null || raw[table.columns.id] === undefined) {
        await this.#unlockAndRelease(token);
        return null;
      }
      const row = claimedRowOf(table, raw, table.columns.attempt !== undefined);
      this.#held.add(key);
      return { row, token };
    } catch (error) {
      if (!connection.released) {
        // A statement that failed may or may not have taken the lock: end the session to be sure.
        connection.markBroken(error);
        connection.release();
      }
      throw error;
    }
  }

  /** Settles the row and unlocks its key, as one statement where it can (`advisorySettleAndUnlockSql`). */
  async settle(token: PostgresAdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    try {
      await this.#settleAndUnlock(token, row, settlement);
    } finally {
      this.#forget(token);
    }
  }

  async #settleAndUnlock(
    token: PostgresAdvisoryToken,
    row: ClaimedRow,
    settlement: Settlement,
  ): Promise<void> {
    // A limit above 1 holds two locks: the settlement runs on its own, then both unlock.
    const combined = token.rowKey === undefined ? this.#combined(settlement) : undefined;
    const { connection } = token;
    const table = this.#options.table.name;
    const operation = `advisory ${settlement.kind} settlement`;
    if (
      combined !== undefined &&
      !connection.released &&
      connection.broken === undefined &&
      !bodyRunning(connection)
    ) {
      let changed: number;
      try {
        const result = await connection.run(combined.stmt, {
          ...combined.values,
          id: row.id,
          key: token.key,
        });
        const raw = result.rows[0];
        if (raw?.[ADVISORY_UNLOCKED_ALIAS] !== true) this.#unconfirmed(connection, token.key);
        changed = Number(raw?.[ADVISORY_CHANGED_ALIAS] ?? 0);
      } catch (error) {
        // Whether the unlock ran is not known: unlock again (an unconfirmed unlock ends the session).
        await this.#unlockAndRelease(token);
        throw normalizeError(error, { table, operation });
      }
      connection.release();
      if (changed === 0) throw advisoryRowGone(table, row.id, token.key, settlement.kind);
      return;
    }
    let failure: unknown;
    try {
      const changed = await this.#options.settlements.apply(token.connection, row.id, settlement);
      if (changed === 0) failure = advisoryRowGone(table, row.id, token.key, settlement.kind);
    } catch (error) {
      failure = normalizeError(error, { table, operation });
    }
    try {
      await this.#unlockAndRelease(token);
    } catch (error) {
      failure ??= error;
    }
    if (failure !== undefined) throw failure;
  }

  async release(token: PostgresAdvisoryToken): Promise<void> {
    try {
      await this.#unlockAndRelease(token);
    } finally {
      this.#forget(token);
    }
  }

  /** Transactional handlers: the body and its settlement in one transaction on the key's session (`src/transactional.ts`). */
  async transaction(token: PostgresAdvisoryToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    const { settlements, table } = this.#options;
    try {
      const target = { table, id: row.id, key: token.key };
      await runAdvisoryTransaction(
        sessionOf(token.connection),
        dialectFor(settlements, table, row.id),
        target,
        work,
        () => this.#unlockAndRelease(token),
      );
    } finally {
      this.#forget(token);
    }
  }

  /** A delivery ended (its key unlocked, or its session ended). */
  #forget(token: PostgresAdvisoryToken): void {
    const key = token.rendered;
    if (token.rowKey !== undefined) this.#heldRows.delete(token.rowKey);
    this.#held.remove(key);
  }

  async close(): Promise<void> {}

  /** The settle-and-unlock statement of a settlement and its own values, if it has one. */
  #combined(settlement: Settlement): { stmt: Statement; values: Record<string, unknown> } | undefined {
    const stmt = settlement.kind === "moveToTable" ? null : this.#options.settleAndUnlock[settlement.kind];
    return stmt === null ? undefined : { stmt, values: settlementValues(settlement) };
  }

  /** Ends the session of an unlock the server did not confirm. */
  #unconfirmed(connection: HeldConnection, key: string): void {
    connection.markBroken(
      new Error(
        `rowclaim/postgres: table "${this.#options.table.name}": the advisory unlock of key "${key}" was not confirmed; closing the session.`,
      ),
    );
  }

  /**
   * Unlocks the key and returns the connection. An unlock the server does not confirm (or a
   * broken connection) destroys the connection instead, which ends the session and its locks.
   */
  async #unlockAndRelease(token: PostgresAdvisoryToken): Promise<void> {
    const { connection, key, rowKey } = token;
    if (releasedIfUnusable(connection)) return;
    try {
      const result =
        rowKey === undefined
          ? await connection.run(advisoryUnlock, { key })
          : await connection.run(advisorySlotUnlock, { key, rowKey });
      if (result.rows[0]?.unlocked !== true) this.#unconfirmed(connection, key);
    } catch (error) {
      connection.markBroken(error);
    } finally {
      connection.release();
    }
  }
}
