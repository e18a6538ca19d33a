/**
 * A running subscription: the public runner that composes a claim scheduler
 * (`subscription-scheduler.ts`: the claim loop, a state machine), a delivery runner
 * (`subscription-delivery.ts`: schema check, handler, settlement) and the outcome → settlement
 * mapping (`subscription-outcome.ts`), over the claim form's runtime.
 *
 * @module
 */
import { AdvisoryRuntime } from "./advisory-runtime.js";
import type { ClaimGate, RateLimitSettings } from "./claim-gate.js";
import type { Handler } from "./delivery.js";
import { DueWake } from "./due-wake.js";
import type { Claimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LeaseRuntime, type LeaseRuntimeOptions } from "./lease-runtime.js";
import type { Logger } from "./logger.js";
import type { RecentDelivery } from "./recent-delivery.js";
import { RowLockRuntime } from "./row-lock-runtime.js";
import type { Headers } from "./rows.js";
import { DeliveryRunner, type DeliverySettings, type SubscriptionObserver } from "./subscription-delivery.js";
import type { Subscription, SubscriptionStats } from "./subscription-handle.js";
import { ClaimScheduler, type ClaimSettings } from "./subscription-scheduler.js";
import type { TableDefinition } from "./table.js";
import { WakeSignal } from "./wake.js";

export type { Subscription, SubscriptionObserver, SubscriptionStats };

/** The resolved settings of one subscription: those of its claim loop, those of its deliveries, and these. */
export interface SubscriptionSettings extends ClaimSettings, DeliverySettings {
  readonly group: string | null;
  readonly extendLeases: boolean;
  /** The subscription's rate limit (`rateLimit`), if any. */
  readonly rateLimit: RateLimitSettings | undefined;
}

/** @internal the broker's implementation of {@link Subscription}. */
export class SubscriptionRunner<P, H = Headers> implements Subscription {
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
    timedOut: 0,
  };
  readonly #runtime: FormRuntime;
  readonly #settings: SubscriptionSettings;
  readonly #inWork = new Set<HeldRow>();
  readonly #scheduler: ClaimScheduler;
  readonly #onStopped: () => void;
  readonly #observer: SubscriptionObserver;
  #stopping: Promise<void> | undefined;

  constructor(args: {
    table: TableDefinition;
    claimer: Claimer;
    handler: Handler<P, H>;
    settings: SubscriptionSettings;
    logger: Logger;
    onStopped: () => void;
    observer: SubscriptionObserver;
    /** Where the broker keeps its most recent handler delivery. */
    recent: RecentDelivery;
    /** Lease form: the host clock and the clock-skew check. */
    lease?: LeaseRuntimeOptions;
    /** The claim gate (`src/claim-gate.ts`), on a driver with run-time controls. */
    gate?: ClaimGate;
    /** The host's clock (the broker's `clock`); default `() => new Date()`. */
    clock?: () => Date;
  }) {
    const clock = args.clock ?? args.lease?.clock;
    const now = clock === undefined ? Date.now : () => clock().getTime();
    this.table = args.table;
    this.group = args.settings.group;
    this.#settings = args.settings;
    this.#onStopped = args.onStopped;
    this.#observer = args.observer;
    this.#runtime = SubscriptionRunner.#formRuntime(args);
    const signal = new WakeSignal();
    const dueWake = new DueWake(() => signal.wake(), now);
    const stop = new AbortController();
    const shared = { inWork: this.#inWork, signal, dueWake, stopped: stop.signal };
    const common = { table: args.table, subscription: this, stats: this.stats, logger: args.logger };
    const deliveries = new DeliveryRunner<P, H>({
      ...common,
      handler: args.handler,
      settings: args.settings,
      observer: args.observer,
      recent: args.recent,
      shared,
      now,
    });
    this.#scheduler = new ClaimScheduler({
      ...common,
      runtime: this.#runtime,
      deliveries,
      settings: args.settings,
      observer: args.observer,
      gate: args.gate,
      shared,
      stop,
    });
  }

  /** The runtime of the claimer's form. */
  static #formRuntime(args: {
    table: TableDefinition;
    claimer: Claimer;
    settings: SubscriptionSettings;
    logger: Logger;
    lease?: LeaseRuntimeOptions;
    clock?: () => Date;
  }): FormRuntime {
    const { claimer, table, logger } = args;
    const clock = args.clock ?? args.lease?.clock;
    switch (claimer.form) {
      case "rowLock":
        return new RowLockRuntime(claimer, table, logger, clock);
      case "lease":
        return new LeaseRuntime(claimer, table, logger, args.settings.extendLeases, args.lease);
      case "advisory":
        return new AdvisoryRuntime(claimer, table, clock);
    }
  }

  get workers(): number {
    return this.#settings.workers;
  }

  get batch(): number {
    return this.#settings.batch;
  }

  get prefetch(): number {
    return this.#settings.prefetch;
  }

  get inWork(): number {
    return this.#inWork.size;
  }

  get held(): number {
    return this.#scheduler.held;
  }

  /** Starts the claim loop. */
  start(): void {
    this.#scheduler.start();
    const { events, logger } = this.#observer;
    logger.info?.(`Table "${this.table.name}" (${this.table.form} form): subscription started.`, {
      table: this.table.name,
      group: this.group,
      workers: this.workers,
    });
    if (events.has("subscriptionStarted"))
      events.emit("subscriptionStarted", { table: this.table, subscription: this });
  }

  idle(): Promise<void> {
    return this.#scheduler.idle();
  }

  /** Wakes the claim loop: a row may be due. */
  wake(): void {
    this.#scheduler.wake();
  }

  stop(options: { timeout?: number } = {}): Promise<void> {
    this.#stopping ??= this.#stop(options.timeout ?? 30_000);
    return this.#stopping;
  }

  async #stop(timeout: number): Promise<void> {
    await this.#scheduler.close(timeout);
    await this.#runtime.close();
    this.#onStopped();
    const { events, logger } = this.#observer;
    logger.info?.(`Table "${this.table.name}" (${this.table.form} form): subscription stopped.`, {
      table: this.table.name,
      group: this.group,
    });
    if (events.has("subscriptionStopped"))
      events.emit("subscriptionStopped", { table: this.table, subscription: this });
  }
}
