/**
 * A running subscription: one claim loop that keeps up to `workers` handlers busy, claiming up
 * to `batch` rows at a time, waking on publish and polling otherwise.
 *
 * @module
 */
import { AdvisoryRuntime } from "./advisory-runtime.js";
import { type BackoffOptions, backoffDelay } from "./backoff.js";
import type { Delivery, Handler } from "./delivery.js";
import { BrokerError, ClosedError, DeclarationError, InvalidArgumentError } from "./errors.js";
import type { Claimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LeaseRuntime } from "./lease-runtime.js";
import type { Logger } from "./logger.js";
import { ack, deadLetter, isOutcome, type Outcome, retry, retryAfter } from "./outcomes.js";
import { RowLockRuntime } from "./row-lock-runtime.js";
import type { Settlement } from "./settlement.js";
import type { DeadLetterTarget, TableDefinition } from "./table.js";
import { WakeSignal } from "./wake.js";

/** Counters of a subscription, for progress displays and health checks. */
export interface SubscriptionStats {
  /** Rows claimed. */
  claimed: number;
  /** Rows settled by ack or drop. */
  acked: number;
  /** Rows given back by retry, retryAfter or a handler that threw. */
  retried: number;
  /** Rows moved to the dead letter. */
  deadLettered: number;
  /** Handlers that threw (or returned something that is not an outcome). */
  failed: number;
  /** Settlements that failed (lease lost, batch rolled back, database errors). */
  settleErrors: number;
  /** Claims that failed (database errors); the loop goes on after a pause. */
  claimErrors: number;
}

/** A running subscription. */
export interface Subscription {
  /** The table it claims from. */
  readonly table: TableDefinition;
  /** The group it claims from (`null`: rows without a group). */
  readonly group: string | null;
  /** Its counters. */
  readonly stats: Readonly<SubscriptionStats>;
  /** How many handlers run in parallel. */
  readonly workers: number;
  /** How many rows one claim takes at most (never more than the free workers). */
  readonly batch: number;
  /** How many deliveries are in work now. */
  readonly inWork: number;
  /**
   * Stops claiming, waits up to `timeout` ms (default 30 s) for deliveries in work to settle,
   * then gives up the rest (their settlements fail with `CLOSED`) and releases the claimer.
   */
  stop(options?: { timeout?: number }): Promise<void>;
}

/** The resolved settings of one subscription. */
export interface SubscriptionSettings {
  readonly group: string | null;
  readonly workers: number;
  readonly batch: number;
  readonly pollInterval: number;
  readonly maxAttempts: number | undefined;
  readonly deadLetter: DeadLetterTarget | undefined;
  readonly backoff: BackoffOptions;
  readonly extendLeases: boolean;
}

/** @internal the broker's implementation of {@link Subscription}. */
export class SubscriptionRunner<P> implements Subscription {
  readonly table: TableDefinition;
  readonly group: string | null;
  readonly stats: SubscriptionStats = {
    claimed: 0,
    acked: 0,
    retried: 0,
    deadLettered: 0,
    failed: 0,
    settleErrors: 0,
    claimErrors: 0,
  };
  readonly #runtime: FormRuntime;
  readonly #handler: Handler<P>;
  readonly #settings: SubscriptionSettings;
  readonly #logger: Logger;
  readonly #signal = new WakeSignal();
  readonly #slotFreed = new WakeSignal();
  readonly #inWork = new Set<HeldRow>();
  readonly #deliveries = new Set<Promise<void>>();
  readonly #onStopped: () => void;
  #running = true;
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #warnedRetryAfter = false;

  constructor(args: {
    table: TableDefinition;
    claimer: Claimer;
    handler: Handler<P>;
    settings: SubscriptionSettings;
    logger: Logger;
    onStopped: () => void;
  }) {
    this.table = args.table;
    this.group = args.settings.group;
    this.#handler = args.handler;
    this.#settings = args.settings;
    this.#logger = args.logger;
    this.#onStopped = args.onStopped;
    const claimer = args.claimer;
    switch (claimer.form) {
      case "rowLock":
        this.#runtime = new RowLockRuntime(claimer, args.table, args.logger);
        break;
      case "lease":
        this.#runtime = new LeaseRuntime(claimer, args.table, args.logger, args.settings.extendLeases);
        break;
      case "advisory":
        this.#runtime = new AdvisoryRuntime(claimer);
        break;
    }
  }

  get workers(): number {
    return this.#settings.workers;
  }

  get batch(): number {
    return this.#settings.batch;
  }

  get inWork(): number {
    return this.#inWork.size;
  }

  /** Starts the claim loop. */
  start(): void {
    this.#loop = this.#claimLoop();
  }

  /** Wakes the claim loop: a row may be due. */
  wake(): void {
    this.#signal.wake();
  }

  stop(options: { timeout?: number } = {}): Promise<void> {
    this.#stopping ??= this.#stop(options.timeout ?? 30_000);
    return this.#stopping;
  }

  async #stop(timeout: number): Promise<void> {
    this.#running = false;
    this.#signal.wake();
    this.#slotFreed.wake();
    await this.#loop;
    const all = Promise.allSettled([...this.#deliveries]);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeout);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      const reason = new ClosedError(
        `Table "${this.table.name}" (${this.table.form} form): the broker closed before this delivery settled; it was given up and its settlement changes nothing.`,
        { table: this.table.name },
      );
      const held = [...this.#inWork];
      this.#inWork.clear();
      await Promise.allSettled(held.map((hold) => hold.abandon(reason)));
    }
    await this.#runtime.close();
    this.#onStopped();
  }

  async #claimLoop(): Promise<void> {
    const { workers, batch, pollInterval } = this.#settings;
    while (this.#running) {
      if (this.#inWork.size >= workers) {
        await this.#slotFreed.wait(pollInterval, this.#slotFreed.generation);
        continue;
      }
      const generation = this.#signal.generation;
      let held: readonly HeldRow[];
      try {
        held = await this.#runtime.claim(Math.min(batch, workers - this.#inWork.size));
      } catch (error) {
        this.stats.claimErrors += 1;
        this.#logger.error(
          `Table "${this.table.name}" (${this.table.form} form): a claim failed; trying again after the poll interval.`,
          {
            error,
          },
        );
        await this.#signal.wait(pollInterval, this.#signal.generation);
        continue;
      }
      this.stats.claimed += held.length;
      for (const hold of held) {
        this.#inWork.add(hold);
        const running = this.#deliver(hold).finally(() => {
          this.#inWork.delete(hold);
          this.#deliveries.delete(running);
          this.#slotFreed.wake();
        });
        this.#deliveries.add(running);
      }
      if (held.length === 0) await this.#signal.wait(pollInterval, generation);
    }
  }

  async #deliver(hold: HeldRow): Promise<void> {
    const { row } = hold;
    let settled = false;
    const settle = async (outcome: Outcome): Promise<void> => {
      if (settled) {
        throw new InvalidArgumentError(
          `Table "${this.table.name}": row ${String(row.id)} was already settled.`,
          {
            table: this.table.name,
          },
        );
      }
      settled = true;
      if (!this.#inWork.has(hold)) {
        throw hold.signal.reason instanceof BrokerError
          ? hold.signal.reason
          : new ClosedError(`Table "${this.table.name}": the broker closed; this delivery was given up.`, {
              table: this.table.name,
            });
      }
      let settlement: Settlement;
      try {
        settlement = this.#settlementFor(outcome);
      } catch (error) {
        // The outcome cannot be applied (deadLetter() with no target): give the row back rather than hold it.
        await hold.settle({ kind: "release", runAt: null }).catch(() => undefined);
        this.stats.settleErrors += 1;
        throw error;
      }
      try {
        await hold.settle(settlement);
      } catch (error) {
        this.stats.settleErrors += 1;
        throw error;
      }
      this.#count(settlement);
      if (this.#freesRows(settlement)) this.#signal.wake();
    };
    const delivery: Delivery<P> = {
      id: row.id,
      payload: row.payload as P,
      attempt: row.attempt,
      group: row.group,
      headers: row.headers,
      row: row.row,
      table: this.table,
      form: this.table.form,
      signal: hold.signal,
      get leaseExpiry() {
        return hold.leaseExpiry;
      },
      settle,
    };

    const { maxAttempts } = this.#settings;
    let outcome: Outcome;
    if (maxAttempts !== undefined && row.attempt > maxAttempts) {
      this.#logger.warn(
        `Table "${this.table.name}": row ${String(row.id)} reached attempt ${row.attempt}, past maxAttempts ${maxAttempts} (deliveries that crashed count too); moving it to the dead letter without running the handler.`,
      );
      outcome = deadLetter();
    } else {
      try {
        const result = await this.#handler(delivery);
        if (settled) return;
        if (result === undefined) outcome = ack();
        else if (isOutcome(result)) outcome = result;
        else
          throw new InvalidArgumentError(
            `the handler returned ${JSON.stringify(result)}, which is not an outcome (ack(), retry(), …)`,
          );
      } catch (error) {
        if (settled) {
          this.#logger.error(
            `Table "${this.table.name}": the handler threw after it settled row ${String(row.id)}.`,
            { error },
          );
          return;
        }
        this.stats.failed += 1;
        outcome = this.#failureOutcome(row.attempt);
        this.#logger.error(
          `Table "${this.table.name}": the handler threw on row ${String(row.id)} (attempt ${row.attempt}); ${outcome.kind === "deadLetter" ? "moving it to the dead letter" : "retrying it"}.`,
          { error },
        );
      }
    }
    if (settled) return;
    try {
      await settle(outcome);
    } catch (error) {
      this.#logger.error(`Table "${this.table.name}": settling row ${String(row.id)} failed.`, { error });
    }
  }

  /**
   * Whether a settlement can make a row claimable for this subscription: a released row is due
   * again; in a FIFO group the next row becomes the head; in the advisory form the key is free
   * for the next row that shares it. The claim loop, which may be sleeping after a claim that
   * found nothing, is then woken instead of waiting out its poll interval.
   */
  #freesRows(settlement: Settlement): boolean {
    return settlement.kind === "release" || this.table.fifo || this.table.form === "advisory";
  }

  #failureOutcome(attempt: number): Outcome {
    const { maxAttempts, backoff } = this.#settings;
    if (maxAttempts !== undefined && attempt >= maxAttempts) return deadLetter();
    if (this.table.columns.runAt === undefined) return retry();
    return retryAfter(backoffDelay(attempt, backoff));
  }

  #settlementFor(outcome: Outcome): Settlement {
    const { columns } = this.table;
    switch (outcome.kind) {
      case "ack":
      case "drop":
        return columns.processedAt === undefined
          ? { kind: "delete" }
          : { kind: "markProcessed", at: new Date() };
      case "retry":
        return { kind: "release", runAt: null };
      case "retryAfter":
        if (columns.runAt === undefined) {
          if (!this.#warnedRetryAfter) {
            this.#warnedRetryAfter = true;
            this.#logger.warn(
              `Table "${this.table.name}" has no runAt column, so retryAfter(${outcome.delayMs}) retries at once. Name columns.runAt to delay retries.`,
            );
          }
          return { kind: "release", runAt: null };
        }
        return { kind: "release", runAt: new Date(Date.now() + outcome.delayMs) };
      case "deadLetter": {
        const target = this.#settings.deadLetter;
        if (target === undefined) {
          throw new DeclarationError(
            `Table "${this.table.name}": the handler returned deadLetter(), but neither the table nor the subscription names a deadLetter target. Set deadLetter: { group } or { table } with maxAttempts.`,
            { table: this.table.name },
          );
        }
        return "group" in target
          ? { kind: "moveToGroup", group: target.group }
          : { kind: "moveToTable", table: target.table };
      }
    }
  }

  #count(settlement: Settlement): void {
    switch (settlement.kind) {
      case "delete":
      case "markProcessed":
        this.stats.acked += 1;
        break;
      case "release":
        this.stats.retried += 1;
        break;
      case "moveToGroup":
      case "moveToTable":
        this.stats.deadLettered += 1;
        break;
    }
  }
}
