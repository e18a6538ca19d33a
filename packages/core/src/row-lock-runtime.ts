/**
 * The row lock form in the broker: a claim is one open transaction; its rows settle inside it
 * one statement after another, and the transaction commits once every row of the batch has
 * settled. A settlement that fails rolls the batch back; the batch's other settlements then
 * fail with `BATCH_ROLLED_BACK`.
 *
 * @module
 */
import { BatchRolledBackError, BrokerError } from "./errors.js";
import type { RowLockClaimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow } from "./rows.js";
import type { Settlement } from "./settlement.js";
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
  readonly #controllers = new Set<AbortController>();

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
    const controller = new AbortController();
    this.#controllers.add(controller);
    return {
      row,
      signal: controller.signal,
      leaseExpiry: undefined,
      settle: (settlement) => this.#settle(row, settlement),
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
      if (this.#unsettled === 0) await this.#commit();
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
    const step = this.#chain.then(async () => {
      if (this.#ended) return;
      try {
        await this.#claimer.settle(this.#token, row, settlement);
      } catch (error) {
        ownFailure = error;
        await this.#rollback(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      this.#unsettled -= 1;
      if (this.#unsettled === 0) await this.#commit();
    });
    this.#chain = step;
    await step;
    await this.#done;
    if (ownFailure !== undefined) throw ownFailure;
    this.#throwIfRolledBack();
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
