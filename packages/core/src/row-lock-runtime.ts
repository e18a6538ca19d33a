/**
 * The row lock form in the broker: a claim is one open transaction; its rows settle inside it
 * one statement after another, and the batch ends once every row of it has settled. A
 * settlement that fails rolls the batch back; the batch's other settlements then fail with
 * `BATCH_ROLLED_BACK`.
 *
 * Acks wait for the batch's last settlement and go with its end (`endBatch`: one statement and
 * the commit). Nothing is lost by waiting: every settlement of a batch resolves only at its end.
 * Where the claimer has `endBatchWithClaim`, a batch whose last row acked is an ack of the
 * {@link AckCarrier}: it waits, within the turn, for the subscription's next claim, and its end
 * and that claim go together on the batch's connection (PostgreSQL and MariaDB: one round trip),
 * with no checkout from the pool; a batch no claim took by the end of the turn ends alone. A
 * carried claim that fails is made again on its own.
 *
 * A batch's ack statement that fails for more than one row cannot say which row the database
 * refused: each of its deliveries fails with `BATCH_ROLLED_BACK` (the statement's error as its
 * cause), and the runtime remembers their ids (in this process): their next acks go one
 * statement each (`settle`), so that the row at fault fails alone with the database's error
 * and the others commit.
 *
 * @module
 */
import { AckCarrier } from "./ack-carrier.js";
import { BatchRolledBackError, BrokerError } from "./errors.js";
import {
  type Acks,
  type BatchEnd,
  type ClaimRequest,
  type Offering,
  offers,
  type RowLockBatch,
  type RowLockClaimer,
} from "./forms.js";
import { answerWhen, type FormRuntime, type HeldRow, type SettleAnswer } from "./held-row.js";
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

/** A batch whose every row settled, with its acks, waiting for a claim to carry its end. */
interface Ending {
  readonly batch: BatchState;
  readonly acks: Acks<ClaimedRow>;
}

/** The broker's runtime for row lock tables. */
export class RowLockRuntime implements FormRuntime {
  readonly #claimer: RowLockClaimer;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  /** Batch ends waiting (within this turn) for a claim to carry them; one claim carries one. */
  readonly #ending: AckCarrier<Ending>;
  readonly #suspects = new Suspects();
  /**
   * Rows of this runtime's batches, by id, until a turn after their batch ended: a claim that
   * takes one again (the batch's end let its lock go) waits for that, so that the row's earlier
   * delivery has seen how its batch ended (the subscription remembers a failed settlement)
   * before the row is handed out again.
   */
  readonly #open = new Map<string, Promise<void>>();
  /** The host's clock (the broker's `clock`): each claim's `now`. */
  readonly #clock: () => Date;

  /** @param clock the host's clock (the broker's `clock`; default `() => new Date()`). */
  constructor(claimer: RowLockClaimer, table: TableDefinition, logger: Logger, clock?: () => Date) {
    this.#clock = clock ?? (() => new Date());
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
    this.#ending = new AckCarrier<Ending>({
      carried: claimer.endBatchWithClaim !== undefined,
      oneAtATime: false,
      take: (waiting) => waiting.splice(0, 1),
      alone: async (ends) => {
        await Promise.all(ends.map(({ batch, acks }) => batch.end(acks)));
      },
    });
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const request: ClaimRequest = { limit, now: this.#clock() };
    const batch = await this.#ending.claim(
      ([ending]) => this.#claimAfter(ending, request),
      () => this.#claimer.claim(request),
    );
    if (batch === null) return [];
    if (batch.rows.length === 0) {
      await this.#claimer.endBatch(batch.token);
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
      this.#ending,
      this.#suspects,
    );
    const holds = new Array<RowLockHold>(batch.rows.length);
    for (let index = 0; index < holds.length; index += 1)
      holds[index] = state.hold(batch.rows[index] as ClaimedRow);
    this.#track(holds, state.done);
    return holds;
  }

  /** Keeps the rows of `holds` in {@link RowLockRuntime.#open} until a turn after `done`. */
  #track(holds: readonly RowLockHold[], done: Promise<void>): void {
    const over = done.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
    for (const hold of holds) this.#open.set(hold.key, over);
    void over.then(() => {
      for (const { key } of holds) {
        if (this.#open.get(key) === over) this.#open.delete(key);
      }
    });
  }

  close(): Promise<void> {
    this.#ending.flush();
    return this.#claimer.close();
  }

  /** The claim carried by `ending`'s end; made again on its own (a new connection) should it fail. */
  async #claimAfter({ batch, acks }: Ending, request: ClaimRequest): Promise<RowLockBatch | null> {
    const claimed = await batch.endWithClaim(acks, request);
    if (claimed !== null && "error" in claimed)
      return this.#claimer.claim({ ...request, now: this.#clock() });
    return claimed;
  }
}

class BatchState {
  readonly #claimer: RowLockClaimer;
  /** The claimer where it runs transactional handlers. */
  readonly #transactional: Offering<RowLockClaimer, "transaction"> | undefined;
  readonly #token: RowLockToken;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  readonly #ending: AckCarrier<Ending>;
  readonly #suspects: Suspects;
  #unsettled: number;
  /** Settlement statements run one after another on the batch's connection. */
  #chain: Promise<void> = Promise.resolve();
  /** Steps of {@link BatchState.#chain} not finished yet. */
  #queued = 0;
  /** Why the batch ended without committing, once it has. */
  #failure: Error | undefined;
  /** Whether the batch's end began (or waits for a claim to carry it): nothing rolls it back then. */
  #ended = false;
  readonly #done: Promise<void>;
  #resolveDone!: () => void;
  readonly #controllers: LazyAbort[] = [];
  /** Rows whose ack waits for the batch's end, to go with it as one statement. */
  readonly #acked: ClaimedRow[] = [];
  /** The acks' settlement (one kind per table). */
  #ack: AckSettlement | undefined;
  /** Why the acks failed, if they did: their deliveries fail with it. */
  #ackFailure: unknown;
  /** What the acks waiting for the batch's end answer once it ended (see `#ackAtEnd`). */
  readonly #answers: SettleAnswer[] = [];
  /** Whether the batch's end is awaited for {@link BatchState.#answers} (one wait a batch, not one a row). */
  #answering = false;

  constructor(
    claimer: RowLockClaimer,
    token: RowLockToken,
    size: number,
    table: TableDefinition,
    logger: Logger,
    ending: AckCarrier<Ending>,
    suspects: Suspects,
  ) {
    this.#claimer = claimer;
    this.#suspects = suspects;
    this.#transactional = offers(claimer, "transaction") ? claimer : undefined;
    this.#token = token;
    this.#unsettled = size;
    this.#table = table;
    this.#logger = logger;
    this.#ending = ending;
    this.#done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
  }

  /** Resolves once the batch ended (committed or not). */
  get done(): Promise<void> {
    return this.#done;
  }

  hold(row: ClaimedRow): RowLockHold {
    return new RowLockHold(this, row);
  }

  /** A new controller for one of the batch's deliveries (aborted when the batch ends without committing). */
  controller(): LazyAbort {
    const controller = new LazyAbort();
    this.#controllers.push(controller);
    return controller;
  }

  /** Whether the claimer runs transactional handlers. */
  get transactional(): boolean {
    return this.#transactional !== undefined;
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
    const claimer = this.#transactional;
    if (claimer === undefined) throw new TypeError("rowclaim: the claimer runs no transactional handlers");
    const watched = watchWork(work);
    let ownFailure: unknown;
    let bodyFailure: { error: unknown } | undefined;
    await this.#queue(async () => {
      if (this.#ended) return;
      try {
        await claimer.transaction(this.#token, row, watched.work);
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

  settle(row: ClaimedRow, settlement: Settlement): Promise<void> {
    const deferred = this.#deferredAck(row, settlement);
    // Nothing queued: the queued step would run now, and an ack's part of it sends nothing. It
    // waits for the batch's end without a step to queue (no closure, nor its scope, for an ack).
    if (deferred !== undefined && this.#queued === 0) {
      return new Promise((resolve, reject) => {
        this.#ackAtEnd(row, deferred, { landed: resolve, failed: reject });
      });
    }
    return this.#settleQueued(row, settlement, deferred);
  }

  /**
   * {@link BatchState.settle} that answers `answer`: an ack while no step is queued waits for the
   * batch's end in one list, answered from one wait of the batch (no frame, nor promise, a row).
   */
  settleInto(row: ClaimedRow, settlement: Settlement, answer: SettleAnswer): void {
    const deferred = this.#deferredAck(row, settlement);
    if (deferred !== undefined && this.#queued === 0) this.#ackAtEnd(row, deferred, answer);
    else answerWhen(this.#settleQueued(row, settlement, deferred), answer);
  }

  /**
   * `settlement` where it is an ack that goes with the batch's end, else `undefined`: not a row
   * whose batch's ack statement failed before (those ack alone: see the module's notes).
   */
  #deferredAck(row: ClaimedRow, settlement: Settlement): AckSettlement | undefined {
    return isAckSettlement(settlement) && !this.#suspects.has(row.id) ? settlement : undefined;
  }

  /** An ack while no step is queued: joins the acks the batch's end sends; `answer` hears how the batch ended. */
  #ackAtEnd(row: ClaimedRow, settlement: AckSettlement, answer: SettleAnswer): void {
    this.#answers.push(answer);
    if (!this.#answering) {
      this.#answering = true;
      void this.#done.then(() => this.#answerAll());
    }
    if (this.#ended) return;
    this.#acked.push(row);
    this.#ack = settlement;
    this.#unsettled -= 1;
    if (this.#unsettled === 0) void this.#finish();
  }

  /** The batch ended: answers every ack that waited for it: its acks' failure, the batch's rollback, or landed. */
  #answerAll(): void {
    this.#answering = false;
    const answers = this.#answers.splice(0);
    for (const answer of answers) {
      let failure: unknown = this.#ackFailure;
      if (failure === undefined) {
        try {
          this.#throwIfRolledBack();
        } catch (error) {
          failure = error;
        }
      }
      if (failure === undefined) answer.landed();
      else answer.failed(failure);
    }
  }

  /** A settlement queued after the batch's other steps; `deferred`: the ack it is, to go with the batch's end. */
  async #settleQueued(
    row: ClaimedRow,
    settlement: Settlement,
    deferred: AckSettlement | undefined,
  ): Promise<void> {
    let ownFailure: unknown;
    await this.#queue(async () => {
      if (this.#ended) return;
      if (deferred !== undefined) {
        // Sent with the batch's other acks at its end (see the module's notes).
        this.#acked.push(row);
        this.#ack = deferred;
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
    if (deferred !== undefined && this.#ackFailure !== undefined) throw this.#ackFailure;
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
   * Every row settled: a batch with acks is an ack of the carrier (its end waits for the next
   * claim where the claimer can carry it, else goes at once); one without only commits.
   */
  async #finish(): Promise<void> {
    this.#ended = true;
    const rows = this.#acked.splice(0);
    const settlement = this.#ack;
    if (settlement === undefined || rows.length === 0) {
      await this.#commit();
      return;
    }
    this.#ending.add({ batch: this, acks: { rows, settlement } });
  }

  /** Ends the batch on its own with its acks (`endBatch`). */
  async end(acks: Acks<ClaimedRow>): Promise<void> {
    try {
      await this.#claimer.endBatch(this.#token, acks);
    } catch (error) {
      // Nothing of the batch committed, and the claimer ended the transaction itself.
      this.#ackFailed(error, acks.rows);
    } finally {
      this.#resolveDone();
    }
  }

  /**
   * Ends the batch together with the next claim on its connection (`endBatchWithClaim`, else
   * the end and then the claim); resolves the claim's part: its batch, `null`, or `{ error }`.
   */
  async endWithClaim(
    acks: Acks<ClaimedRow>,
    request: ClaimRequest,
  ): Promise<RowLockBatch | null | { readonly error: unknown }> {
    const claimer = this.#claimer;
    if (!offers(claimer, "endBatchWithClaim")) {
      await this.end(acks);
      return claimer.claim(request).catch((error: unknown) => ({ error }));
    }
    let result: BatchEnd;
    try {
      result = await claimer.endBatchWithClaim(this.#token, acks, request);
    } catch (error) {
      // The contract says it reports instead; should a claimer throw, nothing is known committed.
      result = { ended: { error }, claimed: { error } };
    }
    if (result.ended !== undefined) this.#ackFailed(result.ended.error, acks.rows);
    this.#resolveDone();
    return result.claimed;
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

  /** Ends a batch without acks: only the commit. */
  async #commit(): Promise<void> {
    try {
      await this.#claimer.endBatch(this.#token);
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
   * Ends the batch without committing: aborts its deliveries with `reason` and releases it.
   * Nothing to do once the batch's end began (every row settled).
   */
  async rollback(reason: Error): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#failure = reason;
    for (const controller of this.#controllers) controller.abort(reason);
    try {
      await this.#claimer.release(this.#token);
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
  /** The row's id as the runtime's map keys it. */
  readonly key: string;
  readonly leaseExpiry = undefined;
  readonly #batch: BatchState;
  readonly #controller: LazyAbort;

  constructor(batch: BatchState, row: ClaimedRow) {
    this.row = row;
    this.key = String(row.id);
    this.#batch = batch;
    this.#controller = batch.controller();
  }

  get transaction(): ((work: TransactionWork) => Promise<void>) | undefined {
    // One method on the prototype, not a closure made for every hold.
    return this.#batch.transactional ? this.#transaction : undefined;
  }

  #transaction(work: TransactionWork): Promise<void> {
    return this.#batch.transaction(this.row, work);
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

  settleInto(settlement: Settlement, answer: SettleAnswer): void {
    this.#batch.settleInto(this.row, settlement, answer);
  }

  async giveBack(reason: BrokerError): Promise<void> {
    this.#controller.abort(reason);
    await this.#batch.giveBack();
  }

  abandon(reason: Error): Promise<void> {
    return this.#batch.rollback(reason);
  }
}
