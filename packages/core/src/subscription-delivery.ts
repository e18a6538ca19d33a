/**
 * The delivery runner of a subscription: runs one claimed row's delivery from its claim to its
 * settlement. It checks the payload against the table's schema, runs the handler (within its
 * timeout, where there is one), offers the handler `settle()` and `transaction()`, settles the
 * row by the outcome (`subscription-outcome.ts` says which), and reports each step (events,
 * logs, spans). The claim scheduler (`subscription-scheduler.ts`) starts deliveries; a
 * delivery gives its worker slot back through the `free` it is started with.
 *
 * @module
 */
import type { Handler } from "./delivery.js";
import type { DueWake } from "./due-wake.js";
import {
  BrokerError,
  ClosedError,
  type HandlerTimeoutError,
  InvalidArgumentError,
  UnsupportedFormError,
} from "./errors.js";
import type { BrokerEvents } from "./events.js";
import { type DeliveryActions, HandlerDelivery } from "./handler-delivery.js";
import { deliveryTimeout, HandlerDeadline, type HandlerTimeoutSettings } from "./handler-timeout.js";
import { answerWhen, type HeldRow, type SettleAnswer } from "./held-row.js";
import type { BrokerLogger, Logger } from "./logger.js";
import { ack, deadLetter, type Outcome, retryAfter } from "./outcomes.js";
import type { RecentDelivery } from "./recent-delivery.js";
import { untilDue } from "./retry-delay.js";
import type { RowId } from "./rows.js";
import type { Settlement } from "./settlement.js";
import type { StandardSchemaV1 } from "./standard-schema.js";
import { describeIssues } from "./standard-schema.js";
import type { Subscription, SubscriptionStats } from "./subscription-handle.js";
import {
  bodyOutcome,
  counterOf,
  droppedDelayMs,
  dueAgainAt,
  failureOutcome,
  finishesRow,
  freesRows,
  handlerOutcome,
  heldDelayMs,
  invalidPayloadOutcome,
  leaseDueAt,
  type OutcomePolicy,
  pastMaxAttempts,
  RememberedSettlements,
  rememberAfter,
  settlementFor,
} from "./subscription-outcome.js";
import type { TableDefinition } from "./table.js";
import type { DeliveryScope, Instrumentation } from "./telemetry.js";
import { bodyWork, type TransactionBody, type TransactionWork, watchWork } from "./transactional.js";
import type { WakeSignal } from "./wake.js";

/** What a subscription reports to besides its counters: the broker's events, its logger and its instrumentation. */
export interface SubscriptionObserver {
  /** The broker's event listeners. */
  readonly events: BrokerEvents;
  /** The broker's logger, able to say whether debug traces are on. */
  readonly logger: BrokerLogger;
  /** Spans and metrics (OpenTelemetry), if the broker was given any. */
  readonly instrumentation: Instrumentation | undefined;
}

/** The settings of a subscription its deliveries read. */
export interface DeliverySettings extends OutcomePolicy {
  /** The handler timeout and its grace (`timeout`, `timeoutGrace`), if any. */
  readonly timeout: HandlerTimeoutSettings | undefined;
}

/**
 * What the deliveries of a subscription share with its claim scheduler: the rows in work, the
 * claim loop's wake (a settlement that frees rows wakes it; a retry wakes it when due), and
 * the stop, which ends the waits of delayed retries.
 */
export interface DeliveryShared {
  /** The rows whose deliveries run; a delivery settles only while its row is in here. */
  readonly inWork: Set<HeldRow>;
  /** Wakes the claim loop. */
  readonly signal: WakeSignal;
  /** Wakes the claim loop when a retried row is due. */
  readonly dueWake: DueWake;
  /** Aborts when the subscription stops. */
  readonly stopped: AbortSignal;
}

/** The worker slot one delivery holds, from its start to its end. */
export interface WorkerSlot {
  /** Gives the slot back, so that the next row may start (the first call; later calls do nothing). */
  free(): void;
  /** The delivery is over: frees the slot where it was not, and the row leaves the rows in work. Called once, last. */
  end(): void;
}

/**
 * One claim's timing, shared by every row it took (one object a claim, not one a row): how long
 * it took, and when it ended (`performance.now()`).
 */
export interface ClaimTiming {
  readonly claimMs: number;
  readonly endedAt: number;
}

/** What a {@link DeliveryRun} tells its runner (one object a runner, not closures a delivery). */
interface RunOwner {
  /** The settlement the run sent landed. */
  landed(run: DeliveryRun): void;
  /** The settlement the run sent failed with `error`. */
  failed(run: DeliveryRun, error: unknown): void;
}

/**
 * One delivery's state, from its claim to its settlement; it hears its own settlement's answer
 * ({@link SettleAnswer}), which it passes to its runner.
 */
class DeliveryRun implements SettleAnswer {
  readonly hold: HeldRow;
  /**
   * Whether the delivery is timed: someone wanted its durations when it began (instrumentation,
   * a `settled` listener, debug logging). An untimed delivery reads no clock of its own.
   */
  readonly timed: boolean;
  /** `performance.now()` at the delivery's start; untimed: its claim's end (no clock read). */
  readonly started: number;
  readonly scope: DeliveryScope | undefined;
  /** The worker slot the delivery holds: freed once its settlement is sent, ended when the delivery is over. */
  readonly slot: WorkerSlot;
  readonly #owner: RunOwner;
  /** When the handler started (`performance.now()`; untimed: {@link DeliveryRun.started}), once it did. */
  handlerStart: number | undefined = undefined;
  /** How long the handler ran: until it returned or settled the row itself, whichever came first. */
  handlerMs: number | undefined = undefined;
  /** Whether the row was settled (or its settlement sent): nothing settles it again. */
  settled = false;
  /** The error a settlement (or a transactional body's commit) failed with: the row was not settled. */
  settleFailure: unknown = undefined;
  /** Whether a transactional body (and its settlement) runs now: a timeout then gives the hold up. */
  transacting = false;
  /** The payload as the schema returned it, or the error of a payload it refused. */
  invalid: InvalidArgumentError | undefined = undefined;
  /** The settlement sent at once (see `#immediate`), if it was. */
  sent: Settlement | undefined = undefined;
  /** The outcome the delivery's own settlement sends (not one the handler sent by `settle`). */
  outcome: Outcome | undefined = undefined;

  constructor(
    hold: HeldRow,
    timed: boolean,
    started: number,
    scope: DeliveryScope | undefined,
    slot: WorkerSlot,
    owner: RunOwner,
  ) {
    this.hold = hold;
    this.timed = timed;
    this.started = started;
    this.scope = scope;
    this.slot = slot;
    this.#owner = owner;
  }

  landed(): void {
    this.#owner.landed(this);
  }

  failed(error: unknown): void {
    this.#owner.failed(this, error);
  }

  /** The delivery is over: its slot ends. */
  end(): void {
    this.slot.end();
  }
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

/** The deliveries of one subscription. */
export class DeliveryRunner<P, H> {
  readonly #table: TableDefinition;
  readonly #subscription: Subscription;
  readonly #stats: SubscriptionStats;
  readonly #handler: Handler<P, H>;
  readonly #settings: DeliverySettings;
  readonly #logger: Logger;
  readonly #observer: SubscriptionObserver;
  readonly #recent: RecentDelivery;
  readonly #inWork: Set<HeldRow>;
  readonly #signal: WakeSignal;
  readonly #dueWake: DueWake;
  readonly #stopped: AbortSignal;
  readonly #now: () => number;
  /**
   * Rows whose settlement failed in this process: the outcome their next claim settles by,
   * without running the handler (see `rememberAfter`).
   */
  readonly #remembered = new RememberedSettlements();
  #warnedRetryAfter = false;
  /** What every delivery's `settle` and `transaction` call (made once, not per delivery). */
  readonly #actions: DeliveryActions<DeliveryRun>;
  /** What every delivery's own settlement answers (made once, not per delivery). */
  readonly #runOwner: RunOwner;
  /** Whether a delivery checks its payload (`payloadSchema`) or runs its handler within a timeout first. */
  readonly #checksFirst: boolean;

  constructor(args: {
    table: TableDefinition;
    /** The subscription the events name. */
    subscription: Subscription;
    /** The subscription's counters, moved here. */
    stats: SubscriptionStats;
    handler: Handler<P, H>;
    settings: DeliverySettings;
    logger: Logger;
    observer: SubscriptionObserver;
    /** Where the broker keeps its most recent handler delivery. */
    recent: RecentDelivery;
    shared: DeliveryShared;
    /** The host's clock, in milliseconds. */
    now: () => number;
  }) {
    this.#table = args.table;
    this.#subscription = args.subscription;
    this.#stats = args.stats;
    this.#handler = args.handler;
    this.#settings = args.settings;
    this.#logger = args.logger;
    this.#observer = args.observer;
    this.#recent = args.recent;
    this.#inWork = args.shared.inWork;
    this.#signal = args.shared.signal;
    this.#dueWake = args.shared.dueWake;
    this.#stopped = args.shared.stopped;
    this.#now = args.now;
    this.#actions = {
      settle: (run, outcome) => this.#settleBy(run, outcome),
      transaction: (run, body) => this.#transaction(run, body),
    };
    this.#checksFirst = args.table.payloadSchema !== undefined || args.settings.timeout !== undefined;
    this.#runOwner = {
      landed: (run) => this.#sentLanded(run),
      failed: (run, error) => this.#sentFailed(run, error),
    };
  }

  /**
   * Runs one delivery of `hold` (its claim timed by `claim`) in `slot`: frees it once its settlement
   * is sent, ends it when the delivery is over. Never throws: what fails is logged and reported.
   *
   * The common delivery (no payload schema, no timeout) makes no promise of its own: the handler's
   * result is followed with one `then`, and the settlement answers the delivery where the hold can
   * (`HeldRow.settleInto`), so that a batch of prefetched rows costs the garbage collector little.
   */
  deliver(hold: HeldRow, claim: ClaimTiming, slot: WorkerSlot): void {
    let run: DeliveryRun;
    try {
      run = this.#begin(hold, claim, slot);
    } catch (error) {
      this.#broke(hold, error);
      slot.end();
      return;
    }
    try {
      const outcome = this.#outcomeWithoutHandler(hold.row);
      if (outcome !== undefined) this.#settleOutcome(run, outcome);
      else if (this.#checksFirst) void this.#deliverChecked(run);
      else this.#runHandler(run, hold.row.payload as P);
    } catch (error) {
      this.#broke(hold, error);
      run.end();
    }
  }

  /** A delivery whose payload is checked first, or whose handler runs within a timeout. */
  async #deliverChecked(run: DeliveryRun): Promise<void> {
    // Once the run was handed on (to the handler's `then`, or to its settlement), what it was
    // handed to ends it; until then, this frame does.
    let handedOn = false;
    try {
      const { row } = run.hold;
      const schema = this.#table.payloadSchema;
      const payload = schema === undefined ? row.payload : await this.#checkPayload(run, schema);
      if (run.invalid !== undefined) {
        this.#stats.failed += 1;
        const outcome = invalidPayloadOutcome(row.attempt, this.#settings);
        this.#failed(
          run.hold,
          run.invalid,
          outcome,
          "its payload fails the table's payloadSchema",
          run.scope,
        );
        handedOn = true;
        this.#settleOutcome(run, outcome);
        return;
      }
      const deadline = this.#deadline(row);
      if (deadline === undefined) {
        handedOn = true;
        this.#runHandler(run, payload as P);
        return;
      }
      const delivery = this.#handlerView(run, payload as P, deadline);
      run.handlerStart = run.timed ? performance.now() : run.started;
      let ran:
        | { readonly value: Awaited<ReturnType<Handler<P, H>>> }
        | { readonly expired: HandlerTimeoutError };
      try {
        ran = await this.#callWithin(delivery, run.scope, deadline);
        if ("expired" in ran) {
          await this.#expired(run, ran.expired);
          return;
        }
      } catch (error) {
        handedOn = true;
        this.#threw(run, error);
        return;
      }
      handedOn = true;
      this.#returned(run, ran.value);
    } catch (error) {
      this.#broke(run.hold, error);
    } finally {
      if (!handedOn) run.end();
    }
  }

  /** The handler's view of `run`, kept as the broker's most recent delivery (`src/recent-delivery.ts`). */
  #handlerView(
    run: DeliveryRun,
    payload: P,
    deadline: HandlerDeadline | undefined,
  ): HandlerDelivery<P, H, DeliveryRun> {
    const delivery = new HandlerDelivery<P, H, DeliveryRun>(
      run.hold,
      payload,
      this.#table,
      deadline,
      run,
      this.#actions,
    );
    this.#recent.keep(delivery);
    return delivery;
  }

  /** Runs the handler (without a deadline); its return or throw settles the row. */
  #runHandler(run: DeliveryRun, payload: P): void {
    const delivery = this.#handlerView(run, payload, undefined);
    run.handlerStart = run.timed ? performance.now() : run.started;
    let result: ReturnType<Handler<P, H>>;
    try {
      result = this.#call(delivery, run.scope);
    } catch (error) {
      this.#threw(run, error);
      return;
    }
    // As `await` would: a value the handler returned is taken up in a later microtask. Bound
    // methods, not closures made per delivery (the conformance package's DRIVERS.md, "The hot path").
    Promise.resolve(result).then(this.#returned.bind(this, run), this.#threw.bind(this, run));
  }

  /** The handler returned `value`: the row is settled by it, unless the handler settled it. */
  #returned(run: DeliveryRun, value: unknown): void {
    this.#handlerElapsed(run);
    let outcome: Outcome;
    try {
      if (run.settled) {
        run.end();
        return;
      }
      outcome = handlerOutcome(value);
    } catch (error) {
      this.#threw(run, error);
      return;
    }
    this.#settleOutcome(run, outcome);
  }

  /** The handler threw `error` (or returned what is not an outcome): a failed attempt, unless it settled the row. */
  #threw(run: DeliveryRun, error: unknown): void {
    let outcome: Outcome | undefined;
    try {
      outcome = this.#handlerThrew(run, error);
    } catch (unexpected) {
      this.#broke(run.hold, unexpected);
    }
    if (outcome === undefined) run.end();
    else this.#settleOutcome(run, outcome);
  }

  /**
   * Settles the row by `outcome` (where nothing settled it yet) and ends the delivery once the
   * settlement landed or failed ({@link DeliveryRunner.#sentLanded}, {@link DeliveryRunner.#sentFailed}).
   */
  #settleOutcome(run: DeliveryRun, outcome: Outcome): void {
    if (run.settled) {
      run.end();
      return;
    }
    run.outcome = outcome;
    try {
      // What #settleBy does, without a frame that waits (the hold, or one `then`, answers the run).
      const settlement = this.#sendStart(run, outcome);
      const { hold } = run;
      if (settlement !== undefined && hold.settleInto !== undefined) hold.settleInto(settlement, run);
      else answerWhen(this.#sendNow(run, outcome, settlement), run);
    } catch (error) {
      run.failed(error);
    }
  }

  /** The settlement {@link DeliveryRunner.#settleOutcome} sent landed: reported, and the delivery ends. */
  #sentLanded(run: DeliveryRun): void {
    try {
      this.#landed(run, run.outcome ?? ack());
    } catch (error) {
      this.#broke(run.hold, error);
    } finally {
      run.end();
    }
  }

  /** The settlement {@link DeliveryRunner.#settleOutcome} sent failed with `error`: remembered, reported, logged; the delivery ends. */
  #sentFailed(run: DeliveryRun, error: unknown): void {
    const outcome = run.outcome ?? ack();
    const { row } = run.hold;
    try {
      this.#notLanded(run, outcome, error);
      this.#logger.error(`Table "${this.#table.name}": settling row ${String(row.id)} failed.`, {
        err: error,
        table: this.#table.name,
        id: row.id,
        outcome: outcome.kind,
        settled: false,
      });
    } catch (unexpected) {
      this.#broke(run.hold, unexpected);
    } finally {
      run.end();
    }
  }

  /** A fault of rowclaim's own in a delivery (none is known): logged, so that the delivery can end. */
  #broke(hold: HeldRow, error: unknown): void {
    this.#logger.error(
      `Table "${this.#table.name}": the delivery of row ${String(hold.row.id)} failed inside rowclaim; its row comes back as its form brings back a crashed delivery's row.`,
      { err: error, table: this.#table.name, id: hold.row.id },
    );
  }

  /** Starts a delivery: emits `claimed`, starts its span; reads the clock only where someone wants durations. */
  #begin(hold: HeldRow, claim: ClaimTiming, slot: WorkerSlot): DeliveryRun {
    const { events, instrumentation, logger } = this.#observer;
    const timed =
      instrumentation !== undefined ||
      events.has("settled") ||
      (logger.debug !== undefined && logger.isDebugEnabled());
    if (events.has("claimed"))
      events.emit("claimed", { ...this.#rowFields(hold.row), claimMs: claim.claimMs });
    return new DeliveryRun(
      hold,
      timed,
      timed ? performance.now() : claim.endedAt,
      instrumentation?.startDelivery(this.#table, hold.row),
      slot,
      this.#runOwner,
    );
  }

  /**
   * The outcome a row is settled by without running its handler: what its last, failed
   * settlement left (see `rememberAfter`), or the dead letter past `maxAttempts`.
   */
  #outcomeWithoutHandler(row: HeldRow["row"]): Outcome | undefined {
    const remembered = this.#recall(row);
    if (remembered !== undefined) return remembered;
    if (!pastMaxAttempts(row.attempt, this.#settings)) return undefined;
    this.#logger.warn(
      `Table "${this.#table.name}": row ${String(row.id)} reached attempt ${row.attempt}, past maxAttempts ${String(this.#settings.maxAttempts)} (deliveries that crashed count too); moving it to the dead letter without running the handler.`,
      { table: this.#table.name, id: row.id, attempt: row.attempt },
    );
    return deadLetter();
  }

  /**
   * The payload as the table's schema returns it; where the schema refuses it (or throws),
   * `run.invalid` holds the error and the row's payload is returned.
   */
  async #checkPayload(run: DeliveryRun, schema: StandardSchemaV1): Promise<unknown> {
    const { row } = run.hold;
    try {
      const result = await schema["~standard"].validate(row.payload);
      if (result.issues === undefined) return result.value;
      run.invalid = new InvalidArgumentError(
        `Table "${this.#table.name}": the payload of row ${String(row.id)} fails the table's payloadSchema: ${describeIssues(result.issues)}.`,
        { table: this.#table.name, cause: { issues: result.issues } },
      );
    } catch (error) {
      run.invalid = new InvalidArgumentError(
        `Table "${this.#table.name}": the table's payloadSchema threw on row ${String(row.id)}.`,
        { table: this.#table.name, cause: error },
      );
    }
    return row.payload;
  }

  /** The handler deadline of one delivery of `row`, where a timeout applies. */
  #deadline(row: HeldRow["row"]): HandlerDeadline | undefined {
    const settings = this.#settings.timeout;
    if (settings === undefined) return undefined;
    const timeout = deliveryTimeout(settings, row.row, (value) =>
      this.#observer.logger.warn(
        `Table "${this.#table.name}": row ${String(row.id)} holds ${JSON.stringify(String(value))} in its timeout column "${settings.column ?? ""}", which is not a whole number of milliseconds from 1 to 2147483647; the subscription's timeout applies.`,
        { table: this.#table.name },
      ),
    );
    if (timeout === undefined) return undefined;
    return new HandlerDeadline(
      timeout,
      `Table "${this.#table.name}": the handler of row ${String(row.id)} (attempt ${row.attempt}) ran past its timeout of ${timeout.timeoutMs} ms.`,
    );
  }

  /**
   * Calls the handler (inside the delivery's span, where there is one). No closure is made for
   * the common call, without instrumentation: `deliver` itself makes none, per delivery.
   */
  #call(
    delivery: HandlerDelivery<P, H, DeliveryRun>,
    scope: DeliveryScope | undefined,
  ): ReturnType<Handler<P, H>> {
    return scope === undefined ? this.#handler(delivery) : this.#callInScope(delivery, scope);
  }

  #callInScope(
    delivery: HandlerDelivery<P, H, DeliveryRun>,
    scope: DeliveryScope,
  ): ReturnType<Handler<P, H>> {
    return scope.run(() => this.#handler(delivery));
  }

  /** Calls the handler until it settles or `deadline` expires (see `runWithin`); clears the deadline's timers then. */
  #callWithin(
    delivery: HandlerDelivery<P, H, DeliveryRun>,
    scope: DeliveryScope | undefined,
    deadline: HandlerDeadline,
  ): Promise<
    { readonly value: Awaited<ReturnType<Handler<P, H>>> } | { readonly expired: HandlerTimeoutError }
  > {
    return runWithin(() => this.#call(delivery, scope), deadline).finally(() => deadline.clear());
  }

  /**
   * How long the handler ran: fixed by the first call after it returned or settled the row. An
   * untimed delivery reads no clock here (0 until {@link DeliveryRunner.#traceSettled} needs it).
   */
  #handlerElapsed(run: DeliveryRun): number {
    if (run.handlerMs === undefined && run.handlerStart !== undefined && run.timed)
      run.handlerMs = performance.now() - run.handlerStart;
    return run.handlerMs ?? 0;
  }

  /**
   * The handler threw: the outcome its row is settled by (a failed attempt), or `undefined`
   * where the row was settled already (what was thrown is logged).
   */
  #handlerThrew(run: DeliveryRun, error: unknown): Outcome | undefined {
    this.#handlerElapsed(run);
    const { row } = run.hold;
    if (run.settled) {
      // Rethrown from a settlement that failed: the row was not settled, and comes back as its form says.
      const notSettled = run.settleFailure !== undefined && error === run.settleFailure;
      this.#logger.error(
        notSettled
          ? `Table "${this.#table.name}": settling row ${String(row.id)} failed, so the row was not settled; it is due again once its claim ends (a rolled-back transaction, a lease that runs out, a session that ends).`
          : `Table "${this.#table.name}": the handler threw after it settled row ${String(row.id)}.`,
        { err: error, table: this.#table.name, id: row.id, settled: !notSettled },
      );
      return undefined;
    }
    this.#stats.failed += 1;
    const outcome = failureOutcome(row.attempt, this.#settings);
    this.#failed(run.hold, error, outcome, "the handler threw", run.scope);
    return outcome;
  }

  /** The handler ran past its timeout and grace: the row is settled as a failed attempt, unless it was settled already. */
  async #expired(run: DeliveryRun, expired: HandlerTimeoutError): Promise<void> {
    this.#handlerElapsed(run);
    await this.#timedOut(run, expired);
    if (run.settled) return;
    const { hold } = run;
    const { row } = hold;
    this.#stats.failed += 1;
    const outcome = failureOutcome(row.attempt, this.#settings);
    this.#failed(hold, expired, outcome, "the handler ran past its timeout and grace", run.scope);
    // Whatever the handler does from now on finds the row settled.
    run.settled = true;
    try {
      await this.#apply(hold, outcome);
      run.scope?.end(outcome.kind, this.#handlerElapsed(run));
      this.#traceSettled(run, outcome);
    } catch (error) {
      this.#remember(hold, outcome, error, false);
      this.#settleFailed(hold, error);
      run.scope?.end(undefined, this.#handlerElapsed(run), error);
      this.#logger.error(
        `Table "${this.#table.name}": settling row ${String(row.id)}, whose handler timed out, failed.`,
        { err: error, table: this.#table.name, id: row.id, outcome: outcome.kind, settled: false },
      );
    }
  }

  /**
   * A handler ran past its timeout and grace: counted; where its transaction body still runs,
   * the hold is given up (row lock: the batch rolls back and its connection is returned; lease:
   * the body's session ends and the lease runs out; advisory: the key is unlocked and its
   * connection returned). Where the handler had not settled, the caller settles the row.
   */
  async #timedOut(run: DeliveryRun, error: HandlerTimeoutError): Promise<void> {
    this.#stats.timedOut += 1;
    if (!run.settled || !run.transacting) return;
    const { hold } = run;
    this.#stats.failed += 1;
    this.#failed(
      hold,
      error,
      retryAfter(0),
      "the handler's transaction ran past its timeout and grace",
      run.scope,
    );
    this.#inWork.delete(hold);
    await hold.abandon(error).catch((cause: unknown) => {
      this.#logger.error(
        `Table "${this.#table.name}": giving up row ${String(hold.row.id)}, whose transactional handler timed out, failed.`,
        { err: cause, table: this.#table.name, id: hold.row.id },
      );
    });
  }

  /** `delivery.settle(outcome)` (and a timeout's settlement): {@link DeliveryRunner.#send}, then its end. */
  async #settleBy(run: DeliveryRun, outcome: Outcome): Promise<void> {
    if (run.settled) throw this.#alreadySettled(run.hold);
    try {
      await this.#send(run, outcome);
    } catch (error) {
      this.#notLanded(run, outcome, error);
      throw error;
    }
    this.#landed(run, outcome);
  }

  /**
   * Sends the settlement of `outcome` (the delivery is settled from now on); resolves once it
   * landed. Then {@link DeliveryRunner.#landed}, or {@link DeliveryRunner.#notLanded} with the error.
   */
  #send(run: DeliveryRun, outcome: Outcome): Promise<void> {
    return this.#sendNow(run, outcome, this.#sendStart(run, outcome));
  }

  /** Sends `settlement` ({@link DeliveryRunner.#sendStart}'s), or `outcome` by {@link DeliveryRunner.#apply} where there is none. */
  #sendNow(run: DeliveryRun, outcome: Outcome, settlement: Settlement | undefined): Promise<void> {
    return settlement === undefined ? this.#apply(run.hold, outcome) : run.hold.settle(settlement);
  }

  /**
   * Marks the delivery settled and frees its worker where `outcome` finishes the row; returns the
   * settlement to send at once (see {@link DeliveryRunner.#immediate}), or `undefined` for one
   * {@link DeliveryRunner.#apply} sends.
   */
  #sendStart(run: DeliveryRun, outcome: Outcome): Settlement | undefined {
    run.settled = true;
    this.#handlerElapsed(run);
    // An ack frees the worker at once; a retry or a dead letter first gives its row back, so
    // that the next claim sees it where it belongs (a retried row keeps its place in order).
    if (finishesRow(outcome)) run.slot.free();
    // The common settlement is sent from here, not through #apply's frames.
    const settlement = this.#immediate(run.hold, outcome);
    run.sent = settlement;
    return settlement;
  }

  /** The settlement {@link DeliveryRunner.#send} sent landed: counted, reported. */
  #landed(run: DeliveryRun, outcome: Outcome): void {
    if (run.sent !== undefined) this.#settled(run.sent);
    run.scope?.end(outcome.kind, this.#handlerElapsed(run));
    this.#traceSettled(run, outcome);
  }

  /** The settlement {@link DeliveryRunner.#send} sent failed with `error`: remembered, counted, reported. */
  #notLanded(run: DeliveryRun, outcome: Outcome, error: unknown): void {
    const { hold } = run;
    if (run.sent !== undefined) this.#stats.settleErrors += 1;
    this.#remember(hold, outcome, error, false);
    run.settleFailure = error;
    this.#settleFailed(hold, error);
    run.scope?.end(undefined, this.#handlerElapsed(run), error);
  }

  /**
   * The settlement `outcome` becomes for a row in work where it is sent at once; `undefined`
   * for a row no longer in work, a retry held for its delay and an outcome the table cannot
   * apply ({@link DeliveryRunner.#apply} takes those).
   */
  #immediate(hold: HeldRow, outcome: Outcome): Settlement | undefined {
    if (!this.#inWork.has(hold) || heldDelayMs(outcome, this.#table) !== undefined) return undefined;
    try {
      return this.#settlementFor(outcome);
    } catch {
      return undefined;
    }
  }

  /** `delivery.transaction(body)`: the body's writes and the row's settlement, in one transaction. */
  async #transaction(run: DeliveryRun, body: TransactionBody<never>): Promise<void> {
    const { hold } = run;
    if (run.settled) throw this.#alreadySettled(hold);
    run.settled = true;
    let settledBy: { outcome: Outcome; settlement: Settlement } | undefined;
    const watched = watchWork(
      bodyWork(body, (returned) => {
        const outcome = bodyOutcome(returned, this.#table);
        settledBy = { outcome, settlement: this.#settlementFor(outcome) };
        if (finishesRow(outcome)) run.slot.free();
        return settledBy.settlement;
      }),
    );
    run.transacting = true;
    try {
      await this.#transact(hold, watched.work, watched.failed);
      run.transacting = false;
      this.#handlerElapsed(run);
    } catch (error) {
      run.transacting = false;
      if (
        watched.failed() ||
        BrokerError.is(error, "INVALID_ARGUMENT") ||
        BrokerError.is(error, "UNSUPPORTED_FORM")
      ) {
        // The body's writes were rolled back and the row is still held: the handler may settle it.
        run.settled = false;
        // A body cut off because the delivery was given up or its lease lost: say so.
        const reason: unknown = hold.signal.aborted ? hold.signal.reason : undefined;
        if (BrokerError.is(reason, "CLOSED") || BrokerError.is(reason, "LEASE_LOST")) throw reason;
        throw error;
      }
      this.#remember(hold, settledBy?.outcome ?? ack(), error, true);
      run.settleFailure = error;
      this.#settleFailed(hold, error);
      run.scope?.end(undefined, this.#handlerElapsed(run), error);
      throw error;
    }
    const outcome = settledBy?.outcome ?? ack();
    run.scope?.end(outcome.kind, this.#handlerElapsed(run));
    this.#traceSettled(run, outcome);
    if (settledBy !== undefined) this.#settled(settledBy.settlement);
  }

  /** The error of a second settlement of one delivery. */
  #alreadySettled(hold: HeldRow): InvalidArgumentError {
    return new InvalidArgumentError(
      `Table "${this.#table.name}": row ${String(hold.row.id)} was already settled.`,
      { table: this.#table.name },
    );
  }

  /** The error of a settlement of a row no longer in work: what gave it up, else the broker's close. */
  #givenUp(hold: HeldRow): BrokerError {
    return hold.signal.reason instanceof BrokerError
      ? hold.signal.reason
      : new ClosedError(`Table "${this.#table.name}": the broker closed; this delivery was given up.`, {
          table: this.#table.name,
        });
  }

  /**
   * Applies an outcome to a held row; counts it and wakes the claim loop where it frees rows,
   * or, for a retry after a delay, when the row is due.
   */
  #apply(hold: HeldRow, outcome: Outcome): Promise<void> {
    if (!this.#inWork.has(hold)) return Promise.reject(this.#givenUp(hold));
    const delayMs = heldDelayMs(outcome, this.#table);
    if (delayMs !== undefined) return this.#settleDelayed(hold, delayMs);
    let settlement: Settlement;
    try {
      settlement = this.#settlementFor(outcome);
    } catch (error) {
      return this.#refused(hold, error);
    }
    return this.#settleHeld(hold, settlement);
  }

  /** The outcome cannot be applied (deadLetter() with no target): gives the row back rather than hold it, and rejects with `error`. */
  async #refused(hold: HeldRow, error: unknown): Promise<void> {
    await hold.settle({ kind: "release", runAt: null }).catch(() => undefined);
    this.#stats.settleErrors += 1;
    throw error;
  }

  /** Settles `hold` by `settlement`, and counts it (see {@link DeliveryRunner.#settled}). */
  async #settleHeld(hold: HeldRow, settlement: Settlement): Promise<void> {
    try {
      await hold.settle(settlement);
    } catch (error) {
      this.#stats.settleErrors += 1;
      throw error;
    }
    this.#settled(settlement);
  }

  /** Counts a settlement that landed, and wakes the claim loop where it frees rows (now, or when due). */
  #settled(settlement: Settlement): void {
    this.#stats[counterOf(settlement)] += 1;
    const due = dueAgainAt(settlement);
    if (due !== undefined) this.#dueWake.at(due);
    if (freesRows(settlement, this.#table)) this.#signal.wake();
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
        this.#dueWake.at(leaseDueAt(due));
      } else {
        await untilDue(due, this.#now, this.#stopped);
        await hold.settle({ kind: "release", runAt: null });
        this.#signal.wake();
      }
    } catch (error) {
      this.#stats.settleErrors += 1;
      throw error;
    }
    this.#stats.retried += 1;
  }

  /** Runs a transactional handler's work and its settlement in one transaction, by the hold's form. */
  async #transact(hold: HeldRow, work: TransactionWork, bodyFailed: () => boolean): Promise<void> {
    if (!this.#inWork.has(hold)) throw this.#givenUp(hold);
    if (hold.transaction === undefined) {
      throw new UnsupportedFormError(
        `Table "${this.#table.name}" (${this.#table.form} form): the handler called delivery.transaction(), but this driver offers no transactional handlers in this form (capabilities.transactionalHandlers). Settle with the handler's return value instead, or use a driver that offers them.`,
        { table: this.#table.name },
      );
    }
    try {
      await hold.transaction(work);
    } catch (error) {
      if (!bodyFailed()) this.#stats.settleErrors += 1;
      throw error;
    }
  }

  /** The settlement of `outcome` on this table; warns once where a delay cannot be written. */
  #settlementFor(outcome: Outcome): Settlement {
    const dropped = this.#warnedRetryAfter ? undefined : droppedDelayMs(outcome, this.#table);
    if (dropped !== undefined) {
      this.#warnedRetryAfter = true;
      this.#logger.warn(
        `Table "${this.#table.name}" has no runAt column, so retryAfter(${dropped}) returned by a transaction body retries at once (one returned by the handler, or a handler that throws, is delayed). Name columns.runAt to delay every retry.`,
      );
    }
    return settlementFor(outcome, this.#table, this.#settings, this.#now);
  }

  /** Remembers a row whose settlement by `outcome` failed with `error` (see `rememberAfter`). */
  #remember(hold: HeldRow, outcome: Outcome, error: unknown, transactional: boolean): void {
    const remembered = rememberAfter(
      { outcome, error, transactional },
      hold.row,
      this.#table,
      this.#settings,
    );
    if (remembered !== undefined) this.#remembered.keep(hold.row, remembered);
  }

  /** The outcome {@link DeliveryRunner.#remember} kept for `row`'s claim now, if any (forgotten then). */
  #recall(row: HeldRow["row"]): Outcome | undefined {
    const outcome = this.#remembered.take(row);
    if (outcome !== undefined && outcome.kind !== "ack" && outcome.kind !== "drop") {
      this.#logger.warn(
        `Table "${this.#table.name}": settling row ${String(row.id)} failed on its last claim; settling it by ${outcome.kind} without running the handler (attempt ${row.attempt}).`,
        { table: this.#table.name, id: row.id, attempt: row.attempt, outcome: outcome.kind },
      );
    }
    return outcome;
  }

  /** The fields every row event carries. */
  #rowFields(row: HeldRow["row"]): {
    table: TableDefinition;
    subscription: Subscription;
    id: RowId;
    attempt: number;
    group: string | null;
  } {
    return {
      table: this.#table,
      subscription: this.#subscription,
      id: row.id,
      attempt: row.attempt,
      group: row.group,
    };
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
      table: this.#table.name,
      id: row.id,
      attempt: row.attempt,
      next,
    };
    const issues = BrokerError.is(error, "INVALID_ARGUMENT")
      ? (error.cause as { issues?: unknown } | undefined)?.issues
      : undefined;
    if (issues !== undefined) details.issues = issues;
    this.#logger.error(
      `Table "${this.#table.name}": ${what} on row ${String(row.id)} (attempt ${row.attempt}); ${next === "deadLetter" ? "moving it to the dead letter" : "retrying it"}.`,
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

  /**
   * Debug trace and `settled` event of a settlement, with its durations; reads no clock where
   * neither is wanted. A delivery untimed at its start (the listener came later) is measured
   * from its claim's end, which is no later than its start: its durations are upper bounds.
   */
  #traceSettled(run: DeliveryRun, outcome: Outcome): void {
    const { events, logger } = this.#observer;
    const debug = logger.debug !== undefined && logger.isDebugEnabled();
    if (!debug && !events.has("settled")) return;
    const now = performance.now();
    const durationMs = now - run.started;
    const handlerMs = run.timed
      ? this.#handlerElapsed(run)
      : run.handlerStart === undefined
        ? 0
        : now - run.handlerStart;
    const { row } = run.hold;
    if (debug) {
      logger.debug?.(`Table "${this.#table.name}": row ${String(row.id)} settled by ${outcome.kind}.`, {
        table: this.#table.name,
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
}
