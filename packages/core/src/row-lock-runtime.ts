/**
 * The row lock form in the broker: a claim is one open transaction; its rows settle inside it
 * one statement after another, and the transaction commits once every row of the batch has
 * settled. A settlement that fails rolls the batch back; the batch's other settlements then
 * fail with `BATCH_ROLLED_BACK`.
 *
 * Acks are coalesced where the claimer has `settleMany`: an ack's statement waits for the
 * batch's last settlement, and the batch's acks then go as one statement just before the
 * commit. Nothing is lost by waiting: every settlement of a batch resolves only at its commit.
 *
 * A batch's end carries the next claim where the claimer has `commitAndClaim`: a batch whose
 * last row acked waits, within the event-loop turn in which it did, for the subscription's next
 * claim (a worker frees its slot when it acks, so that claim starts in the same turn), and the
 * acks, the commit and the next claim then go together on the batch's connection, in as few round
 * trips as the database allows (PostgreSQL and MariaDB: one a row), with no checkout from the
 * pool. A batch no claim took by the end of the
 * turn ends alone (`EndOfTurn`). A carried claim that fails is made again on its own.
 *
 * A coalesced ack statement that fails cannot say which row the database refused: each of its
 * deliveries fails with `BATCH_ROLLED_BACK` (the statement's error as its cause), and the
 * runtime remembers their ids (in this process): their next acks go one statement each, so
 * that the row at fault fails alone with the database's error and the others commit.
 *
 * @module
 */
import { EndOfTurn } from "./end-of-turn.js";
import { BatchRolledBackError, BrokerError } from "./errors.js";
import type { ClaimRequest, RowLockBatch, RowLockClaimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LazyAbort } from "./lazy-abort.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow, RowId } from "./rows.js";
import { type AckSettlement, isAckSettlement, type Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import type { RowLockToken } from "./tokens.js";
import { type TransactionWork, watchWork } from "./transactional.js";

/** How many ids of rows whose coalesced ack failed a runtime remembers at most (the oldest are forgotten). */
const MAX_SUSPECTS = 10_000;

/**
 * Ids of rows whose coalesced ack failed, whose next ack goes alone (one statement each), in
 * this process; bounded by {@link MAX_SUSPECTS}.
 */
class Suspects {
  readonly #ids = new Set<string>();

  has(id: RowId): boolean {
    return this.#ids.size > 0 && this.#ids.has(String(id));
  }

  add(rows: readonly ClaimedRow[]): void {
    for (const row of rows) {
      this.#ids.add(String(row.id));
      if (this.#ids.size > MAX_SUSPECTS) this.#ids.delete(this.#ids.values().next().value as string);
    }
  }

  delete(id: RowId): void {
    if (this.#ids.size > 0) this.#ids.delete(String(id));
  }
}

/** The broker's runtime for row lock tables. */
export class RowLockRuntime implements FormRuntime {
  readonly #claimer: RowLockClaimer;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  /** Batches whose every row settled, waiting (within this turn) for a claim to carry their end. */
  readonly #ending: BatchState[] = [];
  readonly #endOfTurn = new EndOfTurn(() => this.#endAlone());
  /** How a batch offers its end to the next claim; `undefined` where the claimer cannot carry it. */
  readonly #carry: ((batch: BatchState) => void) | undefined;
  readonly #suspects = new Suspects();
  /**
   * Rows of this runtime's batches, by id, until a turn after their batch ended: a claim that
   * takes one again (the batch's end let its lock go) waits for that, so that the row's earlier
   * delivery has seen how its batch ended (the subscription remembers a failed settlement)
   * before the row is handed out again.
   */
  readonly #open = new Map<string, Promise<void>>();

  constructor(claimer: RowLockClaimer, table: TableDefinition, logger: Logger) {
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
    this.#carry =
      claimer.commitAndClaim === undefined || claimer.settleMany === undefined
        ? undefined
        : (batch) => {
            this.#ending.push(batch);
            this.#endOfTurn.set();
          };
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const request: ClaimRequest = { limit, now: new Date() };
    const ending = this.#ending.shift();
    const batch =
      ending === undefined ? await this.#claimer.claim(request) : await this.#claimAfter(ending, request);
    if (batch === null) return [];
    if (batch.rows.length === 0) {
      await this.#claimer.commit(batch.token);
      return [];
    }
    if (this.#open.size > 0) {
      const earlier = batch.rows.flatMap((row) => this.#open.get(String(row.id)) ?? []);
      if (earlier.length > 0) await Promise.all(earlier);
    }
    const state = new BatchState(
      this.#claimer,
      batch.token,
      batch.rows.length,
      this.#table,
      this.#logger,
      this.#carry,
      this.#suspects,
    );
    this.#track(batch.rows, state.done);
    return batch.rows.map((row) => state.hold(row));
  }

  /** Keeps `rows` in {@link RowLockRuntime.#open} until a turn after `done`. */
  #track(rows: readonly ClaimedRow[], done: Promise<void>): void {
    const over = done.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
    for (const row of rows) this.#open.set(String(row.id), over);
    void over.then(() => {
      for (const row of rows) {
        const key = String(row.id);
        if (this.#open.get(key) === over) this.#open.delete(key);
      }
    });
  }

  close(): Promise<void> {
    this.#endAlone();
    return this.#claimer.close();
  }

  /** The claim carried by `ending`'s end; made again on its own (a new connection) should it fail. */
  async #claimAfter(ending: BatchState, request: ClaimRequest): Promise<RowLockBatch | null> {
    const claimed = await ending.endWithClaim(request);
    if (claimed !== null && "error" in claimed) return this.#claimer.claim({ ...request, now: new Date() });
    return claimed;
  }

  /** Ends, each alone, the batches no claim took this turn. */
  #endAlone(): void {
    for (const batch of this.#ending.splice(0)) void batch.endAlone();
  }
}

class BatchState {
  readonly #claimer: RowLockClaimer;
  readonly #token: RowLockToken;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  readonly #carry: ((batch: BatchState) => void) | undefined;
  readonly #suspects: Suspects;
  #unsettled: number;
  /** Settlement statements run one after another on the batch's connection. */
  #chain: Promise<void> = Promise.resolve();
  /** Steps of {@link BatchState.#chain} not finished yet. */
  #queued = 0;
  /** Why the batch ended without committing, once it has. */
  #failure: Error | undefined;
  #ended = false;
  /** The batch's acks, once its end was offered to the next claim (until a claim or the turn's end takes it). */
  #offered: { readonly rows: ClaimedRow[]; readonly settlement: AckSettlement } | undefined;
  readonly #done: Promise<void>;
  #resolveDone!: () => void;
  readonly #controllers = new Set<LazyAbort>();
  /** Rows whose ack waits for the batch's end, to go as one statement (`settleMany`). */
  readonly #acked: ClaimedRow[] = [];
  /** The acks' settlement (one kind per table). */
  #ack: AckSettlement | undefined;
  /** Why the coalesced acks failed, if they did: their deliveries fail with it. */
  #ackFailure: unknown;

  constructor(
    claimer: RowLockClaimer,
    token: RowLockToken,
    size: number,
    table: TableDefinition,
    logger: Logger,
    carry: ((batch: BatchState) => void) | undefined,
    suspects: Suspects,
  ) {
    this.#claimer = claimer;
    this.#suspects = suspects;
    this.#token = token;
    this.#unsettled = size;
    this.#table = table;
    this.#logger = logger;
    this.#carry = carry;
    this.#done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
  }

  /** Resolves once the batch ended (committed or not). */
  get done(): Promise<void> {
    return this.#done;
  }

  hold(row: ClaimedRow): HeldRow {
    return new RowLockHold(this, row);
  }

  /** A new controller for one of the batch's deliveries (aborted when the batch ends without committing). */
  controller(): LazyAbort {
    const controller = new LazyAbort();
    this.#controllers.add(controller);
    return controller;
  }

  /** Whether the claimer runs transactional handlers. */
  get transactional(): boolean {
    return this.#claimer.transaction !== undefined;
  }

  /**
   * Runs `step` after the batch's other steps, on its connection one statement at a time: at
   * once (its synchronous part in this call) when none is waiting, so that a batch whose last
   * row acks offers its end to a claim starting in this turn.
   */
  #queue(step: () => Promise<void>): Promise<void> {
    this.#queued += 1;
    const run = async (): Promise<void> => {
      try {
        await step();
      } finally {
        this.#queued -= 1;
      }
    };
    const next = this.#queued === 1 ? run() : this.#chain.then(run);
    this.#chain = next;
    return next;
  }

  /**
   * A transactional handler's body and its settlement, inside the batch's transaction behind a
   * savepoint, in turn with the batch's other settlements (one statement at a time on the
   * batch's connection). A body that throws rolls back to its savepoint: the batch goes on,
   * the row stays unsettled, and the body's error is rethrown at once. A settlement that fails
   * rolls the whole batch back, every other row's writes with it (`BATCH_ROLLED_BACK`).
   */
  async transaction(row: ClaimedRow, work: TransactionWork): Promise<void> {
    const watched = watchWork(work);
    let ownFailure: unknown;
    let bodyFailure: { error: unknown } | undefined;
    const transaction = this.#claimer.transaction as NonNullable<RowLockClaimer["transaction"]>;
    await this.#queue(async () => {
      if (this.#ended) return;
      try {
        await transaction.call(this.#claimer, this.#token, row, watched.work);
      } catch (error) {
        if (watched.failed()) {
          bodyFailure = { error };
          return;
        }
        ownFailure = error;
        await this.rollback(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      await this.#settled();
    });
    if (bodyFailure !== undefined) throw bodyFailure.error;
    await this.#done;
    if (ownFailure !== undefined) throw ownFailure;
    this.#throwIfRolledBack();
  }

  async settle(row: ClaimedRow, settlement: Settlement): Promise<void> {
    let ownFailure: unknown;
    // A row whose coalesced ack failed before acks alone (see the module's notes).
    const deferred =
      this.#claimer.settleMany !== undefined && isAckSettlement(settlement) && !this.#suspects.has(row.id);
    await this.#queue(async () => {
      if (this.#ended) return;
      if (deferred) {
        // Sent with the batch's other acks at its end (see the module's notes).
        this.#acked.push(row);
        this.#ack = settlement;
      } else {
        try {
          await this.#claimer.settle(this.#token, row, settlement);
        } catch (error) {
          ownFailure = error;
          await this.rollback(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        this.#suspects.delete(row.id);
      }
      await this.#settled();
    });
    await this.#done;
    if (ownFailure !== undefined) throw ownFailure;
    if (deferred && this.#ackFailure !== undefined) throw this.#ackFailure;
    this.#throwIfRolledBack();
  }

  /** A row claimed ahead and never delivered: the batch ends without touching it. */
  async giveBack(): Promise<void> {
    await this.#queue(async () => {
      if (this.#ended) return;
      await this.#settled();
    });
  }

  /** One more row settled (or given back): the batch ends after its last. */
  async #settled(): Promise<void> {
    this.#unsettled -= 1;
    if (this.#unsettled === 0) await this.#finish();
  }

  /**
   * Every row settled: offers the batch's end to the next claim where it can carry it (the
   * batch has acks, and the claimer `commitAndClaim`); else sends the waiting acks (one
   * statement), then commits.
   */
  async #finish(): Promise<void> {
    const acked = this.#acked.splice(0);
    const settlement = acked.length > 0 ? this.#ack : undefined;
    if (settlement !== undefined && this.#carry !== undefined) {
      this.#offered = { rows: acked, settlement };
      this.#carry(this);
      return;
    }
    await this.#endWith(acked, settlement);
  }

  /** Ends the offered batch on its own: no claim took its end within the turn. */
  async endAlone(): Promise<void> {
    const offered = this.#offered;
    if (offered === undefined) return;
    this.#offered = undefined;
    await this.#endWith(offered.rows, offered.settlement);
  }

  /**
   * Ends the offered batch together with the next claim on its connection (`commitAndClaim`);
   * resolves the claim's part: its batch, `null`, or `{ error }`.
   */
  async endWithClaim(request: ClaimRequest): Promise<RowLockBatch | null | { readonly error: unknown }> {
    const offered = this.#offered;
    const commitAndClaim = this.#claimer.commitAndClaim;
    if (offered === undefined || commitAndClaim === undefined) return this.#claimer.claim(request);
    this.#offered = undefined;
    this.#ended = true;
    let result: Awaited<ReturnType<typeof commitAndClaim>>;
    try {
      result = await commitAndClaim.call(
        this.#claimer,
        this.#token,
        offered.rows,
        offered.settlement,
        request,
      );
    } catch (error) {
      // The contract says it reports instead; should a claimer throw, nothing is known committed.
      result = { ended: { error }, claimed: { error } };
    }
    if (result.ended !== undefined) this.#ackFailed(result.ended.error, offered.rows);
    this.#resolveDone();
    return result.claimed;
  }

  /** Sends `acked` (one statement; `settlement` their kind) and commits, or only commits. */
  async #endWith(acked: readonly ClaimedRow[], settlement: AckSettlement | undefined): Promise<void> {
    if (settlement === undefined || acked.length === 0) {
      await this.#commit();
      return;
    }
    const settleAndCommit = this.#claimer.settleAndCommit;
    if (settleAndCommit !== undefined) {
      this.#ended = true;
      try {
        await settleAndCommit.call(this.#claimer, this.#token, acked, settlement);
      } catch (error) {
        // Nothing of the batch committed, and the claimer ended the transaction itself.
        this.#ackFailed(error, acked);
      } finally {
        this.#resolveDone();
      }
      return;
    }
    try {
      if (acked.length === 1) {
        await this.#claimer.settle(this.#token, acked[0] as ClaimedRow, settlement);
      } else {
        const settleMany = this.#claimer.settleMany as NonNullable<RowLockClaimer["settleMany"]>;
        await settleMany.call(this.#claimer, this.#token, acked, settlement);
      }
    } catch (error) {
      this.#blame(error, acked);
      await this.rollback(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    await this.#commit();
  }

  /**
   * The batch's acks (`acked`) failed and nothing of it was committed: its deliveries fail with
   * `error` (one row) or `BATCH_ROLLED_BACK` (see {@link BatchState.#blame}).
   */
  #ackFailed(error: unknown, acked: readonly ClaimedRow[]): void {
    this.#blame(error, acked);
    this.#failure = error instanceof Error ? error : new Error(String(error));
    for (const controller of this.#controllers) controller.abort(this.#failure);
  }

  /**
   * Who the acks' `error` is reported to: the one row the statement acked; for more, none of
   * them (the statement cannot say which row the database refused): each fails with
   * `BATCH_ROLLED_BACK`, and their next acks go alone.
   */
  #blame(error: unknown, acked: readonly ClaimedRow[]): void {
    if (acked.length > 1) this.#suspects.add(acked);
    else this.#ackFailure = error;
  }

  /** Throws why the batch ended without committing, if it did. */
  #throwIfRolledBack(): void {
    if (this.#failure !== undefined) {
      if (BrokerError.is(this.#failure, "CLOSED")) throw this.#failure;
      throw new BatchRolledBackError(
        `Table "${this.#table.name}" (row lock form): another settlement of this batch failed, so the batch's transaction was rolled back and this row is due again. Cause: ${this.#failure.message}`,
        { table: this.#table.name, cause: this.#failure },
      );
    }
  }

  async #commit(): Promise<void> {
    this.#ended = true;
    try {
      await this.#claimer.commit(this.#token);
    } catch (error) {
      this.#failure = error instanceof Error ? error : new Error(String(error));
      this.#logger.error(
        `Table "${this.#table.name}": committing a row lock batch failed; its rows are due again.`,
        {
          err: this.#failure,
        },
      );
    } finally {
      this.#resolveDone();
    }
  }

  /**
   * Ends the batch without committing: aborts its deliveries with `reason` and rolls back.
   * Nothing to do once the batch ended, or while its end waits for a claim (every row settled).
   */
  async rollback(reason: Error): Promise<void> {
    if (this.#ended || this.#offered !== undefined) return;
    this.#ended = true;
    this.#failure = reason;
    for (const controller of this.#controllers) controller.abort(reason);
    try {
      await this.#claimer.rollback(this.#token);
    } catch (error) {
      this.#logger.error(`Table "${this.#table.name}": rolling back a row lock batch failed.`, {
        err: error,
      });
    }
    this.#resolveDone();
  }
}

/** One row of a row lock batch, as the subscription holds it. */
class RowLockHold implements HeldRow {
  readonly row: ClaimedRow;
  readonly leaseExpiry = undefined;
  readonly transaction: ((work: TransactionWork) => Promise<void>) | undefined;
  readonly #batch: BatchState;
  readonly #controller: LazyAbort;

  constructor(batch: BatchState, row: ClaimedRow) {
    this.row = row;
    this.#batch = batch;
    this.#controller = batch.controller();
    this.transaction = batch.transactional ? (work) => batch.transaction(row, work) : undefined;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#controller.aborted;
  }

  settle(settlement: Settlement): Promise<void> {
    return this.#batch.settle(this.row, settlement);
  }

  async giveBack(reason: BrokerError): Promise<void> {
    this.#controller.abort(reason);
    await this.#batch.giveBack();
  }

  abandon(reason: Error): Promise<void> {
    return this.#batch.rollback(reason);
  }
}
