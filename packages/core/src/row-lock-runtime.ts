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
 * @module
 */
import { BatchRolledBackError, BrokerError } from "./errors.js";
import type { RowLockClaimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LazyAbort } from "./lazy-abort.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow } from "./rows.js";
import { type AckSettlement, isAckSettlement, type Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import type { RowLockToken } from "./tokens.js";
import { type TransactionWork, watchWork } from "./transactional.js";

/** The broker's runtime for row lock tables. */
export class RowLockRuntime implements FormRuntime {
  readonly #claimer: RowLockClaimer;
  readonly #table: TableDefinition;
  readonly #logger: Logger;

  constructor(claimer: RowLockClaimer, table: TableDefinition, logger: Logger) {
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const batch = await this.#claimer.claim({ limit, now: new Date() });
    if (batch === null) return [];
    if (batch.rows.length === 0) {
      await this.#claimer.commit(batch.token);
      return [];
    }
    const state = new BatchState(this.#claimer, batch.token, batch.rows.length, this.#table, this.#logger);
    return batch.rows.map((row) => state.hold(row));
  }

  close(): Promise<void> {
    return this.#claimer.close();
  }
}

class BatchState {
  readonly #claimer: RowLockClaimer;
  readonly #token: RowLockToken;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  #unsettled: number;
  /** Settlement statements run one after another on the batch's connection. */
  #chain: Promise<void> = Promise.resolve();
  /** Why the batch ended without committing, once it has. */
  #failure: Error | undefined;
  #ended = false;
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
  ) {
    this.#claimer = claimer;
    this.#token = token;
    this.#unsettled = size;
    this.#table = table;
    this.#logger = logger;
    this.#done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
  }

  hold(row: ClaimedRow): HeldRow {
    const controller = new LazyAbort();
    this.#controllers.add(controller);
    return {
      row,
      get signal() {
        return controller.signal;
      },
      get aborted() {
        return controller.aborted;
      },
      leaseExpiry: undefined,
      settle: (settlement) => this.#settle(row, settlement),
      giveBack: async (reason: BrokerError) => {
        controller.abort(reason);
        await this.#giveBack();
      },
      ...(this.#claimer.transaction === undefined
        ? {}
        : { transaction: (work: TransactionWork) => this.#transaction(row, work) }),
      abandon: (reason) => this.#rollback(reason),
    };
  }

  /**
   * A transactional handler's body and its settlement, inside the batch's transaction behind a
   * savepoint, in turn with the batch's other settlements (one statement at a time on the
   * batch's connection). A body that throws rolls back to its savepoint: the batch goes on,
   * the row stays unsettled, and the body's error is rethrown at once. A settlement that fails
   * rolls the whole batch back, every other row's writes with it (`BATCH_ROLLED_BACK`).
   */
  async #transaction(row: ClaimedRow, work: TransactionWork): Promise<void> {
    const watched = watchWork(work);
    let ownFailure: unknown;
    let bodyFailure: { error: unknown } | undefined;
    const transaction = this.#claimer.transaction as NonNullable<RowLockClaimer["transaction"]>;
    const step = this.#chain.then(async () => {
      if (this.#ended) return;
      try {
        await transaction.call(this.#claimer, this.#token, row, watched.work);
      } catch (error) {
        if (watched.failed()) {
          bodyFailure = { error };
          return;
        }
        ownFailure = error;
        await this.#rollback(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      this.#unsettled -= 1;
      if (this.#unsettled === 0) await this.#finish();
    });
    this.#chain = step;
    await step;
    if (bodyFailure !== undefined) throw bodyFailure.error;
    await this.#done;
    if (ownFailure !== undefined) throw ownFailure;
    this.#throwIfRolledBack();
  }

  async #settle(row: ClaimedRow, settlement: Settlement): Promise<void> {
    let ownFailure: unknown;
    let deferred = false;
    const step = this.#chain.then(async () => {
      if (this.#ended) return;
      if (this.#claimer.settleMany !== undefined && isAckSettlement(settlement)) {
        // Sent with the batch's other acks at its end (see the module's notes).
        deferred = true;
        this.#acked.push(row);
        this.#ack = settlement;
      } else {
        try {
          await this.#claimer.settle(this.#token, row, settlement);
        } catch (error) {
          ownFailure = error;
          await this.#rollback(error instanceof Error ? error : new Error(String(error)));
          return;
        }
      }
      this.#unsettled -= 1;
      if (this.#unsettled === 0) await this.#finish();
    });
    this.#chain = step;
    await step;
    await this.#done;
    if (ownFailure !== undefined) throw ownFailure;
    if (deferred && this.#ackFailure !== undefined) throw this.#ackFailure;
    this.#throwIfRolledBack();
  }

  /** A row claimed ahead and never delivered: the batch ends without touching it. */
  async #giveBack(): Promise<void> {
    const step = this.#chain.then(async () => {
      if (this.#ended) return;
      this.#unsettled -= 1;
      if (this.#unsettled === 0) await this.#finish();
    });
    this.#chain = step;
    await step;
  }

  /** Every row settled: sends the waiting acks (one statement), then commits. */
  async #finish(): Promise<void> {
    const acked = this.#acked.splice(0);
    const settlement = acked.length > 0 ? this.#ack : undefined;
    if (settlement === undefined) {
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
        this.#ackFailure = error;
        this.#failure = error instanceof Error ? error : new Error(String(error));
        for (const controller of this.#controllers) controller.abort(this.#failure);
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
      this.#ackFailure = error;
      await this.#rollback(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    await this.#commit();
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

  /** Ends the batch without committing: aborts its deliveries with `reason` and rolls back. */
  async #rollback(reason: Error): Promise<void> {
    if (this.#ended) return;
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
