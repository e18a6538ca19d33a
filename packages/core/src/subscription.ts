/**
 * A running subscription: one claim loop that keeps up to `workers` handlers busy, claiming up
 * to `batch` rows at a time, waking on publish and polling otherwise. With `prefetch`, it holds
 * up to that many rows more, claimed ahead, each waiting for a free worker.
 *
 * @module
 */
import { AdvisoryRuntime } from "./advisory-runtime.js";
import { type BackoffOptions, backoffDelay } from "./backoff.js";
import type { Admission, ClaimGate, RateLimitSettings } from "./claim-gate.js";
import type { Delivery, Handler } from "./delivery.js";
import { DueWake } from "./due-wake.js";
import {
  BrokerError,
  ClosedError,
  DeclarationError,
  type HandlerTimeoutError,
  InvalidArgumentError,
  LeaseLostError,
  UnsupportedFormError,
} from "./errors.js";
import type { BrokerEvents } from "./events.js";
import type { Claimer } from "./forms.js";
import {
  deliverySignal,
  deliveryTimeout,
  HandlerDeadline,
  type HandlerTimeoutSettings,
} from "./handler-timeout.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LeaseRuntime, type LeaseRuntimeOptions } from "./lease-runtime.js";
import type { BrokerLogger, Logger } from "./logger.js";
import { ack, deadLetter, isOutcome, type Outcome, retryAfter } from "./outcomes.js";
import { untilDue } from "./retry-delay.js";
import { RowLockRuntime } from "./row-lock-runtime.js";
import type { Headers, RowId } from "./rows.js";
import type { Settlement } from "./settlement.js";
import { checkWithSchema, describeIssues } from "./standard-schema.js";
import type { DeadLetterTarget, TableDefinition } from "./table.js";
import type { DeliveryScope, Instrumentation } from "./telemetry.js";
import { ceilToSecond } from "./tokens.js";
import { bodyWork, type TransactionBody, type TransactionWork, watchWork } from "./transactional.js";
import { WakeSignal } from "./wake.js";

/** How long a claim loop runs at most without giving the event loop a turn, in milliseconds. */
const YIELD_EVERY_MS = 10;

/** How many rows whose settlement failed a subscription remembers at most (the oldest are forgotten). */
const MAX_REMEMBERED = 10_000;

/**
 * Errors after which a settlement is not remembered: the delivery was given up or lost, or
 * the connection went (as a crash, it spends no attempt), or the outcome itself was refused.
 */
const NOT_REMEMBERED = [
  "CLOSED",
  "LEASE_LOST",
  "CONNECTION_LOST",
  "CONNECTION_TIMEOUT",
  "DECLARATION",
  "INVALID_ARGUMENT",
] as const;

/**
 * Whether an outcome finishes its row (ack, drop): its worker is free once the settlement is
 * sent. A retry or a dead letter gives the row back first, so that the next claim sees it where
 * it belongs.
 */
function finishesRow(outcome: Outcome): boolean {
  return outcome.kind === "ack" || outcome.kind === "drop";
}

/**
 * Runs a handler until it settles or `deadline` expires, whichever comes first; a handler that
 * throws at once rejects as one that throws later. What it does after the expiry is ignored.
 */
async function runWithin<T>(
  call: () => T,
  deadline: HandlerDeadline,
): Promise<{ readonly value: Awaited<T> } | { readonly expired: HandlerTimeoutError }> {
  const running = (async () => ({ value: await call() }))();
  return Promise.race([running, deadline.whenExpired.then((expired) => ({ expired }))]);
}

/** What a subscription reports to besides its counters: the broker's events, its logger and its instrumentation. */
export interface SubscriptionObserver {
  /** The broker's event listeners. */
  readonly events: BrokerEvents;
  /** The broker's logger, able to say whether debug traces are on. */
  readonly logger: BrokerLogger;
  /** Spans and metrics (OpenTelemetry), if the broker was given any. */
  readonly instrumentation: Instrumentation | undefined;
}

import type { Subscription, SubscriptionStats } from "./subscription-handle.js";

export type { Subscription, SubscriptionStats };

/** The resolved settings of one subscription. */
export interface SubscriptionSettings {
  readonly group: string | null;
  readonly workers: number;
  readonly batch: number;
  readonly prefetch: number;
  readonly pollInterval: number;
  readonly maxAttempts: number | undefined;
  readonly deadLetter: DeadLetterTarget | undefined;
  readonly backoff: BackoffOptions;
  readonly extendLeases: boolean;
  /** The subscription's rate limit (`rateLimit`), if any. */
  readonly rateLimit: RateLimitSettings | undefined;
  /** The handler timeout and its grace (`timeout`, `timeoutGrace`), if any. */
  readonly timeout: HandlerTimeoutSettings | undefined;
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
  readonly #handler: Handler<P, H>;
  readonly #settings: SubscriptionSettings;
  readonly #logger: Logger;
  readonly #signal = new WakeSignal();
  readonly #slotFreed = new WakeSignal();
  readonly #inWork = new Set<HeldRow>();
  /**
   * Worker slots taken: deliveries whose handlers run and have not settled yet. A delivery that
   * acks frees its slot when its settlement is sent (the handler returned, or called `settle`,
   * or its transaction body returned), not when the settlement commits: the next row starts
   * while the settlement is in flight (and, coalesced, waits for others). A retry or a dead
   * letter frees it once its row is given back.
   */
  #busy = 0;
  /** Rows claimed ahead (prefetch), in claim order, waiting for a worker; each with its claim's time. */
  readonly #waiting: { readonly hold: HeldRow; readonly claimMs: number }[] = [];
  readonly #deliveries = new Set<Promise<void>>();
  readonly #onStopped: () => void;
  readonly #observer: SubscriptionObserver;
  #running = true;
  #loop: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #warnedRetryAfter = false;
  /** Claims begun so far; an idle waiter counts claims begun after it. */
  #claimCount = 0;
  /** Claims running now (more than one while the loop claims ahead). */
  #claiming = 0;
  /**
   * Rows whose settlement failed in this process, by id: the attempt their next claim reads
   * while nothing of that settlement landed, and the outcome that claim settles by, without
   * running the handler (see {@link SubscriptionRunner.#remember}).
   */
  readonly #remembered = new Map<string, { readonly attempt: number; readonly outcome: Outcome }>();
  readonly #idleWaiters = new Set<{ readonly after: number; readonly resolve: () => void }>();
  /** The claim gate (pauses, rate limit), on a driver with run-time controls. */
  readonly #gate: ClaimGate | undefined;
  /** How long the gate asked the loop to wait before the next claim (a used-up rate window). */
  #gateWaitMs: number | undefined;
  /** The host's clock, in milliseconds (the broker's `clock`). */
  readonly #now: () => number;
  /** Wakes the claim loop when the earliest row this subscription retried or delayed is due. */
  readonly #dueWake: DueWake;
  /** Aborts when the subscription stops: rows held for a retry's delay are released then. */
  readonly #stopped = new AbortController();

  constructor(args: {
    table: TableDefinition;
    claimer: Claimer;
    handler: Handler<P, H>;
    settings: SubscriptionSettings;
    logger: Logger;
    onStopped: () => void;
    observer: SubscriptionObserver;
    /** Lease form: the host clock and the clock-skew check. */
    lease?: LeaseRuntimeOptions;
    /** The claim gate (`src/claim-gate.ts`), on a driver with run-time controls. */
    gate?: ClaimGate;
    /** The host's clock (the broker's `clock`); default `() => new Date()`. */
    clock?: () => Date;
  }) {
    this.#gate = args.gate;
    const clock = args.clock ?? args.lease?.clock;
    this.#now = clock === undefined ? Date.now : () => clock().getTime();
    this.#dueWake = new DueWake(() => this.#signal.wake(), this.#now);
    this.table = args.table;
    this.group = args.settings.group;
    this.#handler = args.handler;
    this.#settings = args.settings;
    this.#logger = args.logger;
    this.#onStopped = args.onStopped;
    this.#observer = args.observer;
    const claimer = args.claimer;
    switch (claimer.form) {
      case "rowLock":
        this.#runtime = new RowLockRuntime(claimer, args.table, args.logger);
        break;
      case "lease":
        this.#runtime = new LeaseRuntime(
          claimer,
          args.table,
          args.logger,
          args.settings.extendLeases,
          args.lease,
        );
        break;
      case "advisory":
        this.#runtime = new AdvisoryRuntime(claimer, args.table);
        break;
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
    return this.#inWork.size + this.#waiting.length;
  }

  /** Starts the claim loop. */
  start(): void {
    this.#loop = this.#claimLoop();
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
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idleWaiters.add({ after: this.#claimCount, resolve });
      this.#signal.wake();
    });
  }

  /** Resolves the idle waiters a claim begun as number `claim` that found nothing satisfies. */
  #foundNothing(claim: number): void {
    if (this.#idleWaiters.size === 0 || this.held > 0 || this.#claiming > 0) return;
    for (const waiter of this.#idleWaiters) {
      if (claim > waiter.after) {
        this.#idleWaiters.delete(waiter);
        waiter.resolve();
      }
    }
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
    this.#stopped.abort();
    this.#dueWake.close();
    for (const waiter of this.#idleWaiters) waiter.resolve();
    this.#idleWaiters.clear();
    this.#signal.wake();
    this.#slotFreed.wake();
    await this.#loop;
    // Rows claimed ahead whose handlers never started go back at once (a row lock batch cannot
    // commit before they do).
    await this.#giveBackWaiting();
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
    const { events, logger } = this.#observer;
    logger.info?.(`Table "${this.table.name}" (${this.table.form} form): subscription stopped.`, {
      table: this.table.name,
      group: this.group,
    });
    if (events.has("subscriptionStopped"))
      events.emit("subscriptionStopped", { table: this.table, subscription: this });
  }

  /** Gives back every row waiting for a worker (the subscription stopped); failures are logged. */
  async #giveBackWaiting(): Promise<void> {
    const waiting = this.#waiting.splice(0);
    if (waiting.length === 0) return;
    const reason = new ClosedError(
      `Table "${this.table.name}" (${this.table.form} form): the subscription stopped before this row, claimed ahead, reached a worker; it was given back unhandled.`,
      { table: this.table.name },
    );
    const results = await Promise.allSettled(waiting.map(({ hold }) => hold.giveBack(reason)));
    results.forEach((result, index) => {
      if (result.status === "rejected") {
        this.#logger.error(
          `Table "${this.table.name}": giving back row ${String(waiting[index]?.hold.row.id)}, claimed ahead, failed; it comes back as its form brings back a crashed delivery's row.`,
          { err: result.reason, table: this.table.name },
        );
      }
    });
    this.#slotFreed.wake();
  }

  /**
   * Starts waiting rows while workers are free (and the subscription runs); drops rows whose
   * hold was lost meanwhile, and gives back lease rows whose lease ran out by the host's clock
   * (after a stall, before an extension could find out whether another claim took them).
   */
  #startWaiting(): void {
    const { workers } = this.#settings;
    while (this.#running && this.#busy < workers) {
      const next = this.#waiting.shift();
      if (next === undefined) return;
      // A lease lost (or a batch rolled back) while the row waited: it is no longer ours to run.
      if (next.hold.aborted) continue;
      if (next.hold.expired === true) {
        this.#giveBackExpired(next.hold);
        continue;
      }
      this.#start(next.hold, next.claimMs);
    }
  }

  /** Gives back a waiting lease row whose lease ran out (released where it still holds it, due again). */
  #giveBackExpired(hold: HeldRow): void {
    const reason = new LeaseLostError(
      `Table "${this.table.name}" (lease form): the lease of row ${String(hold.row.id)}, claimed ahead, ran out before a worker was free; it was given back unhandled.`,
      { table: this.table.name },
    );
    hold.giveBack(reason).catch((error: unknown) => {
      this.#logger.error(
        `Table "${this.table.name}": giving back row ${String(hold.row.id)}, whose lease ran out while it waited, failed; it is due again once its lease ran out.`,
        { err: error, table: this.table.name },
      );
    });
  }

  /** Starts one delivery. */
  #start(hold: HeldRow, claimMs: number): void {
    this.#inWork.add(hold);
    this.#busy += 1;
    let slot = true;
    const free = (): void => {
      if (!slot) return;
      slot = false;
      this.#busy -= 1;
      if (this.#waiting.length > 0) this.#startWaiting();
      this.#slotFreed.wake();
    };
    const running = this.#deliver(hold, claimMs, free).finally(() => {
      this.#inWork.delete(hold);
      this.#deliveries.delete(running);
      free();
      this.#slotFreed.wake();
    });
    this.#deliveries.add(running);
  }

  async #claimLoop(): Promise<void> {
    const { workers, batch, pollInterval, prefetch } = this.#settings;
    const capacity = workers + prefetch;
    // With rows held ahead, a lease claim takes at most half the room (or a batch): when more is
    // free (at the start, or once the workers outran the claims), a claim of the rest runs
    // beside it, so two claims' round trips overlap. While a claim runs, settled rows add up
    // to the next claim's room: a busy queue is claimed in large claims, not one row each. A
    // row lock claim is not split: each claim is a transaction holding a connection.
    const mostPerClaim =
      prefetch === 0 || this.table.form !== "lease"
        ? batch
        : Math.max(1, Math.min(batch, Math.ceil(capacity / 2)));
    // Claims running without the loop waiting for them (claims ahead), and the slots every
    // claim in flight has reserved: held plus reserved never passes `workers + prefetch`.
    const ahead = new Set<Promise<void>>();
    let reserved = 0;
    // Whether the last claim found as many rows as it asked for: the queue has more.
    let full = false;
    let ranSince = performance.now();
    while (this.#running) {
      // A driver that answers synchronously (SQLite) and handlers that do too make the whole
      // loop one chain of promise jobs, in which no timer runs (lease extension, the close
      // timeout, the user's own): give the event loop a turn every few milliseconds.
      if (performance.now() - ranSince > YIELD_EVERY_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        ranSince = performance.now();
        // A stop during that turn woke the signal before this claim read its generation: its
        // wait would not see that wake, and would sleep out the poll interval.
        if (!this.#running) break;
      }
      // Room: rows whose handlers have not sent their settlement (running or waiting) stay
      // within `workers + prefetch`. A row whose settlement is in flight leaves room at once, so
      // the next claim starts without waiting for the settlement's commit (beside it, or carrying
      // it); such rows are still held until it commits, at most `workers + prefetch` more.
      const free = Math.min(
        capacity - this.#busy - this.#waiting.length - reserved,
        2 * capacity - this.held - reserved,
      );
      if (free <= 0) {
        // Every finished delivery, finished claim and stop wakes this wait: no timer to arm and clear.
        await this.#slotFreed.next(this.#slotFreed.generation);
        continue;
      }
      const generation = this.#signal.generation;
      const limit = Math.min(free, mostPerClaim);
      reserved += limit;
      const claiming = this.#claimOnce(limit).finally(() => {
        reserved -= limit;
      });
      if (full && (limit < free || limit === mostPerClaim)) {
        // A busy queue, and nothing to gain by waiting for this claim: slots it does not fill (a
        // batch smaller than the free workers, as the row lock form's default 1) get a claim
        // beside it rather than wait for its round trip; and a claim already as large as a claim
        // may be cannot grow by waiting, so a slot freed meanwhile gets its own claim in the turn
        // in which it was freed (where an ack waits for the next claim within that turn to go
        // with it: the lease and advisory forms' `claimWithAcks`, a row lock batch's
        // `endBatchWithClaim`). A smaller claim is waited for instead, so that the room settled
        // rows free meanwhile adds up to the next claim (with `prefetch`, claims stay large).
        // Claims in flight stay within the room: each reserves its limit.
        const running: Promise<void> = claiming.then((found) => {
          full = found === limit;
          ahead.delete(running);
          this.#slotFreed.wake();
        });
        ahead.add(running);
        continue;
      }
      const found = await claiming;
      full = found === limit;
      // A stop that came during the claim woke the signal before this wait could see it.
      if (!this.#running) break;
      if (found === -1) {
        await this.#signal.wait(pollInterval, this.#signal.generation);
      } else if (found === 0 && ahead.size === 0) {
        // A used-up rate window ends sooner than the poll interval, maybe.
        const gateWait = this.#gateWaitMs;
        this.#gateWaitMs = undefined;
        await this.#signal.wait(
          gateWait === undefined ? pollInterval : Math.min(gateWait, pollInterval),
          generation,
        );
      }
    }
    await Promise.allSettled([...ahead]);
  }

  /**
   * One claim of up to `limit` rows: starts a delivery for each row it takes. Returns how many it
   * took, or -1 when it failed (logged, counted and reported here).
   */
  async #claimOnce(limit: number): Promise<number> {
    const claimStart = performance.now();
    this.#claimCount += 1;
    const claim = this.#claimCount;
    let held: readonly HeldRow[];
    this.#claiming += 1;
    let admission: Admission | undefined;
    try {
      if (this.#gate !== undefined) {
        admission = await this.#gate.admit(limit);
        if (admission.granted === 0) {
          // Paused, or the rate window used up: no claim, and not idle (rows may be due).
          this.#gateWaitMs = admission.waitMs;
          return 0;
        }
      }
      held = await this.#runtime.claim(admission === undefined ? limit : Math.min(limit, admission.granted));
    } catch (error) {
      this.stats.claimErrors += 1;
      this.#logger.error(
        `Table "${this.table.name}" (${this.table.form} form): a claim failed; trying again after the poll interval.`,
        { err: error, table: this.table.name },
      );
      const { events } = this.#observer;
      if (events.has("claimError"))
        events.emit("claimError", { table: this.table, subscription: this, error });
      return -1;
    } finally {
      this.#claiming -= 1;
    }
    if (admission !== undefined && held.length < admission.granted)
      void this.#gate?.unused(admission, held.length);
    this.stats.claimed += held.length;
    const claimMs = performance.now() - claimStart;
    if (held.length > 0) {
      this.#observer.instrumentation?.claimed(this.table, held.length, claimMs);
      this.#traceClaim(held, claimMs);
    }
    const { workers } = this.#settings;
    for (const hold of held) {
      if (this.#busy < workers && this.#waiting.length === 0) this.#start(hold, claimMs);
      else this.#waiting.push({ hold, claimMs });
    }
    if (this.#waiting.length > 0) this.#startWaiting();
    if (held.length === 0) this.#foundNothing(claim);
    return held.length;
  }

  /** Runs one delivery; `free` gives its worker slot back once its settlement is sent. */
  async #deliver(hold: HeldRow, claimMs: number, free: () => void): Promise<void> {
    const { row } = hold;
    const { events, instrumentation } = this.#observer;
    const started = performance.now();
    if (events.has("claimed")) events.emit("claimed", { ...this.#rowFields(row), claimMs });
    const scope: DeliveryScope | undefined = instrumentation?.startDelivery(this.table, row);
    // How long the handler ran: until it returned, or until it settled the row itself
    // (`settle()`, or a transaction body's commit), whichever came first.
    let handlerStart: number | undefined;
    let handlerMs: number | undefined;
    const handlerElapsed = (): number => {
      if (handlerMs === undefined && handlerStart !== undefined) handlerMs = performance.now() - handlerStart;
      return handlerMs ?? 0;
    };
    let settled = false;
    // The error a settlement (or a transactional body's commit) failed with: the row was not settled.
    let settleFailure: unknown;
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
      handlerElapsed();
      // An ack frees the worker at once; a retry or a dead letter first gives its row back, so
      // that the next claim sees it where it belongs (a retried row keeps its place in order).
      if (finishesRow(outcome)) free();
      try {
        await this.#settle(hold, outcome);
      } catch (error) {
        this.#remember(hold, outcome, error, false);
        settleFailure = error;
        this.#settleFailed(hold, error);
        scope?.end(undefined, handlerElapsed(), error);
        throw error;
      }
      const durationMs = performance.now() - started;
      scope?.end(outcome.kind, handlerElapsed());
      this.#traceSettled(hold, outcome, durationMs, handlerElapsed());
    };

    // Whether a transactional body (and its settlement) runs now: a timeout then gives the hold up.
    let transacting = false;
    const transaction = async (body: TransactionBody<never>): Promise<void> => {
      if (settled) {
        throw new InvalidArgumentError(
          `Table "${this.table.name}": row ${String(row.id)} was already settled.`,
          {
            table: this.table.name,
          },
        );
      }
      settled = true;
      let settledBy: { outcome: Outcome; settlement: Settlement } | undefined;
      const watched = watchWork(
        bodyWork(body, (returned) => {
          if (returned !== undefined && !isOutcome(returned)) {
            throw new InvalidArgumentError(
              `Table "${this.table.name}": the transaction body returned ${JSON.stringify(returned)}, which is not an outcome (ack(), retry(), …).`,
              { table: this.table.name },
            );
          }
          const outcome = returned ?? ack();
          settledBy = { outcome, settlement: this.#settlementFor(outcome) };
          if (finishesRow(outcome)) free();
          return settledBy.settlement;
        }),
      );
      transacting = true;
      try {
        await this.#transact(hold, watched.work, watched.failed);
        transacting = false;
        handlerElapsed();
      } catch (error) {
        transacting = false;
        if (
          watched.failed() ||
          BrokerError.is(error, "INVALID_ARGUMENT") ||
          BrokerError.is(error, "UNSUPPORTED_FORM")
        ) {
          // The body's writes were rolled back (or, on a driver without transactional handlers,
          // never ran) and the row is still held: the handler may settle it.
          settled = false;
          // A body cut off because the delivery was given up or its lease lost: say so.
          const reason: unknown = hold.signal.aborted ? hold.signal.reason : undefined;
          if (BrokerError.is(reason, "CLOSED") || BrokerError.is(reason, "LEASE_LOST")) throw reason;
          throw error;
        }
        this.#remember(hold, settledBy?.outcome ?? ack(), error, true);
        settleFailure = error;
        this.#settleFailed(hold, error);
        scope?.end(undefined, handlerElapsed(), error);
        throw error;
      }
      const outcome = settledBy?.outcome ?? ack();
      scope?.end(outcome.kind, handlerElapsed());
      this.#traceSettled(hold, outcome, performance.now() - started, handlerElapsed());
      if (settledBy !== undefined) {
        const { settlement } = settledBy;
        this.#count(settlement);
        if (settlement.kind === "release" && settlement.runAt !== null) this.#dueWake.at(settlement.runAt);
        if (this.#freesRows(settlement)) this.#signal.wake();
      }
    };

    const { maxAttempts } = this.#settings;
    let outcome: Outcome;
    const remembered = this.#recall(row);
    if (remembered !== undefined) {
      outcome = remembered;
    } else if (maxAttempts !== undefined && row.attempt > maxAttempts) {
      this.#logger.warn(
        `Table "${this.table.name}": row ${String(row.id)} reached attempt ${row.attempt}, past maxAttempts ${maxAttempts} (deliveries that crashed count too); moving it to the dead letter without running the handler.`,
        { table: this.table.name, id: row.id, attempt: row.attempt },
      );
      outcome = deadLetter();
    } else {
      let payload: unknown = row.payload;
      const schema = this.table.payloadSchema;
      let invalid: InvalidArgumentError | undefined;
      if (schema !== undefined) {
        try {
          const result = await checkWithSchema(schema, payload);
          if (result.issues === undefined) payload = result.value;
          else
            invalid = new InvalidArgumentError(
              `Table "${this.table.name}": the payload of row ${String(row.id)} fails the table's payloadSchema: ${describeIssues(result.issues)}.`,
              { table: this.table.name, cause: { issues: result.issues } },
            );
        } catch (error) {
          invalid = new InvalidArgumentError(
            `Table "${this.table.name}": the table's payloadSchema threw on row ${String(row.id)}.`,
            { table: this.table.name, cause: error },
          );
        }
      }
      if (invalid !== undefined) {
        this.stats.failed += 1;
        // A payload that fails the schema will fail it again: straight to the dead letter where there is one.
        outcome = this.#settings.deadLetter !== undefined ? deadLetter() : this.#failureOutcome(row.attempt);
        this.#failed(hold, invalid, outcome, "its payload fails the table's payloadSchema", scope);
      } else {
        const settings = this.#settings.timeout;
        const timeout =
          settings === undefined
            ? undefined
            : deliveryTimeout(settings, row.row, (value) =>
                this.#observer.logger.warn(
                  `Table "${this.table.name}": row ${String(row.id)} holds ${JSON.stringify(String(value))} in its timeout column "${settings.column ?? ""}", which is not a whole number of milliseconds from 1 to 2147483647; the subscription's timeout applies.`,
                  { table: this.table.name },
                ),
              );
        const deadline =
          timeout === undefined
            ? undefined
            : new HandlerDeadline(
                timeout,
                `Table "${this.table.name}": the handler of row ${String(row.id)} (attempt ${row.attempt}) ran past its timeout of ${timeout.timeoutMs} ms.`,
              );
        let signal: AbortSignal | undefined;
        const delivery: Delivery<P, H> = {
          id: row.id,
          payload: payload as P,
          attempt: row.attempt,
          group: row.group,
          headers: row.headers as H,
          row: row.row,
          table: this.table,
          form: this.table.form,
          get signal() {
            signal ??= deliverySignal(hold.signal, deadline);
            return signal;
          },
          get leaseExpiry() {
            return hold.leaseExpiry;
          },
          settle,
          transaction,
        };
        handlerStart = performance.now();
        try {
          const call = (): ReturnType<Handler<P, H>> =>
            scope === undefined ? this.#handler(delivery) : scope.run(() => this.#handler(delivery));
          let result: Awaited<ReturnType<Handler<P, H>>>;
          if (deadline === undefined) {
            result = await call();
          } else {
            const ran = await runWithin(call, deadline).finally(() => deadline.clear());
            if ("expired" in ran) {
              handlerElapsed();
              await this.#timedOut(hold, ran.expired, { settled, transacting, scope });
              if (settled) return;
              this.stats.failed += 1;
              outcome = this.#failureOutcome(row.attempt);
              this.#failed(hold, ran.expired, outcome, "the handler ran past its timeout and grace", scope);
              // Whatever the handler does from now on finds the row settled.
              settled = true;
              try {
                await this.#settle(hold, outcome);
                scope?.end(outcome.kind, handlerElapsed());
                this.#traceSettled(hold, outcome, performance.now() - started, handlerElapsed());
              } catch (error) {
                this.#remember(hold, outcome, error, false);
                this.#settleFailed(hold, error);
                scope?.end(undefined, handlerElapsed(), error);
                this.#logger.error(
                  `Table "${this.table.name}": settling row ${String(row.id)}, whose handler timed out, failed.`,
                  {
                    err: error,
                    table: this.table.name,
                    id: row.id,
                    outcome: outcome.kind,
                    settled: false,
                  },
                );
              }
              return;
            }
            result = ran.value;
          }
          handlerElapsed();
          if (settled) return;
          if (result === undefined) outcome = ack();
          else if (isOutcome(result)) outcome = result;
          else
            throw new InvalidArgumentError(
              `the handler returned ${JSON.stringify(result)}, which is not an outcome (ack(), retry(), …)`,
            );
        } catch (error) {
          handlerElapsed();
          if (settled) {
            // Rethrown from a settlement that failed: the row was not settled, and comes back as its form says.
            const notSettled = settleFailure !== undefined && error === settleFailure;
            this.#logger.error(
              notSettled
                ? `Table "${this.table.name}": settling row ${String(row.id)} failed, so the row was not settled; it is due again once its claim ends (a rolled-back transaction, a lease that runs out, a session that ends).`
                : `Table "${this.table.name}": the handler threw after it settled row ${String(row.id)}.`,
              { err: error, table: this.table.name, id: row.id, settled: !notSettled },
            );
            return;
          }
          this.stats.failed += 1;
          outcome = this.#failureOutcome(row.attempt);
          this.#failed(hold, error, outcome, "the handler threw", scope);
        }
      }
    }
    if (settled) return;
    try {
      await settle(outcome);
    } catch (error) {
      this.#logger.error(`Table "${this.table.name}": settling row ${String(row.id)} failed.`, {
        err: error,
        table: this.table.name,
        id: row.id,
        outcome: outcome.kind,
        settled: false,
      });
    }
  }

  /**
   * A handler ran past its timeout and grace: counted; where its transaction body still runs,
   * the hold is given up (row lock: the batch rolls back and its connection is returned; lease:
   * the body's session ends and the lease runs out; advisory: the key is unlocked and its
   * connection returned). Where the handler had not settled, the caller settles the row.
   */
  async #timedOut(
    hold: HeldRow,
    error: HandlerTimeoutError,
    state: { settled: boolean; transacting: boolean; scope: DeliveryScope | undefined },
  ): Promise<void> {
    this.stats.timedOut += 1;
    if (!state.settled || !state.transacting) return;
    this.stats.failed += 1;
    this.#failed(
      hold,
      error,
      retryAfter(0),
      "the handler's transaction ran past its timeout and grace",
      state.scope,
    );
    this.#inWork.delete(hold);
    await hold.abandon(error).catch((cause: unknown) => {
      this.#logger.error(
        `Table "${this.table.name}": giving up row ${String(hold.row.id)}, whose transactional handler timed out, failed.`,
        { err: cause, table: this.table.name, id: hold.row.id },
      );
    });
  }

  /**
   * Remembers (in this process) a row whose settlement by `outcome` failed with `error`, so that
   * its next claim settles it without running the handler, where the failure shows nothing of
   * the settlement landed:
   *
   * - `BATCH_ROLLED_BACK` (row lock form, not transactional): another settlement of the batch
   *   failed; the row's own outcome is settled again on its next claim (the handler ran).
   * - a database error (the row's own settlement refused, say by a constraint): the next claim
   *   settles the row as a handler failure of this attempt (a retry with backoff, counting the
   *   attempt, or the dead letter at `maxAttempts`; a dead letter the database refused becomes a
   *   retry with backoff). In the row lock form the failed settlement rolled back with its
   *   batch and counted nothing: this is where its attempt is counted, so that a row whose
   *   settlement always fails is tried at most `maxAttempts` times, with backoff, then
   *   dead-lettered. A crash (or a lost connection) is not remembered and spends no attempt.
   */
  #remember(hold: HeldRow, outcome: Outcome, error: unknown, transactional: boolean): void {
    if (NOT_REMEMBERED.some((code) => BrokerError.is(error, code))) return;
    const { row } = hold;
    const rowLock = this.table.form === "rowLock";
    let next: Outcome;
    if (BrokerError.is(error, "BATCH_ROLLED_BACK")) {
      // A transactional body's writes rolled back with the batch: its handler runs again.
      if (!rowLock || transactional) return;
      next = outcome;
    } else {
      next =
        outcome.kind === "deadLetter" ? this.#retryOutcome(row.attempt) : this.#failureOutcome(row.attempt);
    }
    const key = String(row.id);
    this.#remembered.delete(key);
    this.#remembered.set(key, { attempt: rowLock ? row.attempt : row.attempt + 1, outcome: next });
    if (this.#remembered.size > MAX_REMEMBERED)
      this.#remembered.delete(this.#remembered.keys().next().value as string);
  }

  /** The outcome {@link SubscriptionRunner.#remember} kept for `row`'s claim now, if any (forgotten then). */
  #recall(row: HeldRow["row"]): Outcome | undefined {
    if (this.#remembered.size === 0) return undefined;
    const key = String(row.id);
    const remembered = this.#remembered.get(key);
    if (remembered === undefined) return undefined;
    this.#remembered.delete(key);
    if (remembered.attempt !== row.attempt) return undefined;
    if (remembered.outcome.kind !== "ack" && remembered.outcome.kind !== "drop") {
      this.#logger.warn(
        `Table "${this.table.name}": settling row ${String(row.id)} failed on its last claim; settling it by ${remembered.outcome.kind} without running the handler (attempt ${row.attempt}).`,
        { table: this.table.name, id: row.id, attempt: row.attempt, outcome: remembered.outcome.kind },
      );
    }
    return remembered.outcome;
  }

  /**
   * Applies an outcome to a held row; counts it and wakes the claim loop where it frees rows,
   * or, for a retry after a delay, when the row is due.
   */
  async #settle(hold: HeldRow, outcome: Outcome): Promise<void> {
    if (!this.#inWork.has(hold)) {
      throw hold.signal.reason instanceof BrokerError
        ? hold.signal.reason
        : new ClosedError(`Table "${this.table.name}": the broker closed; this delivery was given up.`, {
            table: this.table.name,
          });
    }
    if (outcome.kind === "retryAfter" && outcome.delayMs > 0 && this.table.columns.runAt === undefined) {
      await this.#settleDelayed(hold, outcome.delayMs);
      return;
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
    if (settlement.kind === "release" && settlement.runAt !== null) this.#dueWake.at(settlement.runAt);
    if (this.#freesRows(settlement)) this.#signal.wake();
  }

  /**
   * A retry after `delayMs` on a table without `runAt` (see `retry-delay.ts`): a lease moves to
   * the due time and the row goes; a row lock or advisory hold is kept, with its worker (so
   * that the connections in use stay within `workers + 1`), until the due time (or the
   * subscription's stop), then released.
   */
  async #settleDelayed(hold: HeldRow, delayMs: number): Promise<void> {
    const due = this.#now() + delayMs;
    try {
      if (hold.delay !== undefined) {
        await hold.delay(new Date(due));
        // Due once the lease, rounded up to a whole second, has run out.
        this.#dueWake.at(ceilToSecond(due).getTime() + 1);
      } else {
        await untilDue(due, this.#now, this.#stopped.signal);
        await hold.settle({ kind: "release", runAt: null });
        this.#signal.wake();
      }
    } catch (error) {
      this.stats.settleErrors += 1;
      throw error;
    }
    this.stats.retried += 1;
  }

  /** Runs a transactional handler's work and its settlement in one transaction, by the hold's form. */
  async #transact(hold: HeldRow, work: TransactionWork, bodyFailed: () => boolean): Promise<void> {
    if (!this.#inWork.has(hold)) {
      throw hold.signal.reason instanceof BrokerError
        ? hold.signal.reason
        : new ClosedError(`Table "${this.table.name}": the broker closed; this delivery was given up.`, {
            table: this.table.name,
          });
    }
    if (hold.transaction === undefined) {
      throw new UnsupportedFormError(
        `Table "${this.table.name}" (${this.table.form} form): the handler called delivery.transaction(), but this driver offers no transactional handlers in this form (capabilities.transactionalHandlers). Settle with the handler's return value instead, or use a driver that offers them.`,
        { table: this.table.name },
      );
    }
    try {
      await hold.transaction(work);
    } catch (error) {
      if (!bodyFailed()) this.stats.settleErrors += 1;
      throw error;
    }
  }

  /** The fields every row event carries. */
  #rowFields(row: HeldRow["row"]): {
    table: TableDefinition;
    subscription: Subscription;
    id: RowId;
    attempt: number;
    group: string | null;
  } {
    return { table: this.table, subscription: this, id: row.id, attempt: row.attempt, group: row.group };
  }

  /** Logs a failed delivery (with `err`) and emits `failed`. */
  #failed(
    hold: HeldRow,
    error: unknown,
    outcome: Outcome,
    what: string,
    scope: DeliveryScope | undefined,
  ): void {
    scope?.failed(error);
    const { row } = hold;
    const next = outcome.kind === "deadLetter" ? "deadLetter" : "retry";
    const details: Record<string, unknown> = {
      err: error,
      table: this.table.name,
      id: row.id,
      attempt: row.attempt,
      next,
    };
    const issues = BrokerError.is(error, "INVALID_ARGUMENT")
      ? (error.cause as { issues?: unknown } | undefined)?.issues
      : undefined;
    if (issues !== undefined) details.issues = issues;
    this.#logger.error(
      `Table "${this.table.name}": ${what} on row ${String(row.id)} (attempt ${row.attempt}); ${next === "deadLetter" ? "moving it to the dead letter" : "retrying it"}.`,
      details,
    );
    const { events } = this.#observer;
    if (events.has("failed")) events.emit("failed", { ...this.#rowFields(row), error, next });
  }

  /** Emits `leaseLost` or `settleError` for a settlement that failed. */
  #settleFailed(hold: HeldRow, error: unknown): void {
    const { events } = this.#observer;
    if (BrokerError.is(error, "LEASE_LOST")) {
      if (events.has("leaseLost")) events.emit("leaseLost", { ...this.#rowFields(hold.row), error });
    } else if (events.has("settleError")) {
      events.emit("settleError", { ...this.#rowFields(hold.row), error });
    }
  }

  /** Debug trace of a claim. */
  #traceClaim(held: readonly HeldRow[], claimMs: number): void {
    const { logger } = this.#observer;
    if (logger.debug === undefined || !logger.isDebugEnabled()) return;
    logger.debug(`Table "${this.table.name}" (${this.table.form} form): claimed ${held.length} row(s).`, {
      table: this.table.name,
      ids: held.map((hold) => hold.row.id),
      claimMs,
    });
  }

  /** Debug trace and `settled` event of a settlement. */
  #traceSettled(hold: HeldRow, outcome: Outcome, durationMs: number, handlerMs: number): void {
    const { events, logger } = this.#observer;
    const { row } = hold;
    if (logger.debug !== undefined && logger.isDebugEnabled()) {
      logger.debug(`Table "${this.table.name}": row ${String(row.id)} settled by ${outcome.kind}.`, {
        table: this.table.name,
        id: row.id,
        attempt: row.attempt,
        outcome: outcome.kind,
        durationMs,
        handlerMs,
      });
    }
    if (events.has("settled"))
      events.emit("settled", { ...this.#rowFields(row), outcome: outcome.kind, durationMs, handlerMs });
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
    const { maxAttempts } = this.#settings;
    if (maxAttempts !== undefined && attempt >= maxAttempts) return deadLetter();
    return this.#retryOutcome(attempt);
  }

  /** A retry after the backoff of `attempt` (held as `retry-delay.ts` says where the table has no `runAt`). */
  #retryOutcome(attempt: number): Outcome {
    return retryAfter(backoffDelay(attempt, this.#settings.backoff));
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
              `Table "${this.table.name}" has no runAt column, so retryAfter(${outcome.delayMs}) returned by a transaction body retries at once (one returned by the handler, or a handler that throws, is delayed). Name columns.runAt to delay every retry.`,
            );
          }
          return { kind: "release", runAt: null };
        }
        return { kind: "release", runAt: new Date(this.#now() + outcome.delayMs) };
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
