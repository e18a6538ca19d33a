/**
 * The claim scheduler of a subscription: one claim loop that keeps up to `workers` deliveries
 * running, claiming up to `batch` rows at a time, waking on publish and polling otherwise. With
 * `prefetch`, it holds up to that many rows more, claimed ahead, each waiting for a free worker.
 *
 * The loop is a state machine; every transition names the state it leaves and the one it
 * enters, and the type of {@link CLAIM_TRANSITIONS} refuses any other at compile time:
 *
 * | state          | what the loop does                                                     | leaves for |
 * | -------------- | ---------------------------------------------------------------------- | ---------- |
 * | `ready`        | reads the room left by held rows and claims in flight                  | `yielding` (it ran 10 ms), `awaitingRoom` (no room), `claiming`, `ready` (a claim ran ahead), `draining` (stopped) |
 * | `yielding`     | gives the event loop a turn                                            | `ready`, `draining` |
 * | `awaitingRoom` | waits, with no timer, for a delivery or a claim ahead to end           | `ready` |
 * | `claiming`     | waits for its claim                                                    | `ready` (rows found, or claims ahead still run), `idle`, `gated`, `backingOff`, `draining` |
 * | `idle`         | the claim found nothing: waits for a wake or the poll interval         | `ready` |
 * | `gated`        | paused, or the rate window used up: waits for a wake, the poll interval or the window's end | `ready` |
 * | `backingOff`   | the claim failed: waits out the poll interval (a wake during the failed claim does not cut it short) | `ready` |
 * | `draining`     | stopped: waits for the claims ahead, gives back the rows claimed ahead, waits (up to the stop's timeout) for the deliveries and gives up the rest | `closed` |
 * | `closed`       | nothing runs                                                           | — |
 *
 * What wakes `idle` and `gated`: a publish in this process, a settlement that frees rows, the
 * due time of a row this subscription retried (`due-wake.ts`), a control change, `idle()`,
 * `stop()`. A claim "runs ahead" (the loop does not wait for it) when the queue is busy (the
 * last claim was full) and waiting could not make the claim larger (see {@link claimsAhead}).
 *
 * @module
 */
import type { Admission, ClaimGate } from "./claim-gate.js";
import type { DueWake } from "./due-wake.js";
import { ClosedError, LeaseLostError } from "./errors.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import type { Logger } from "./logger.js";
import type {
  ClaimTiming,
  DeliveryShared,
  SubscriptionObserver,
  WorkerSlot,
} from "./subscription-delivery.js";
import type { Subscription, SubscriptionStats } from "./subscription-handle.js";
import type { ClaimFormName, TableDefinition } from "./table.js";
import { WakeSignal } from "./wake.js";

/** How long a claim loop runs at most without giving the event loop a turn, in milliseconds. */
const YIELD_EVERY_MS = 10;

/** The states of a claim loop (see the module's transition table). */
export type ClaimState =
  | "ready"
  | "yielding"
  | "awaitingRoom"
  | "claiming"
  | "idle"
  | "gated"
  | "backingOff"
  | "draining"
  | "closed";

/** The transitions a claim loop may take, by the state it leaves. */
export const CLAIM_TRANSITIONS = {
  ready: ["yielding", "awaitingRoom", "claiming", "ready", "draining"],
  yielding: ["ready", "draining"],
  awaitingRoom: ["ready"],
  claiming: ["ready", "idle", "gated", "backingOff", "draining"],
  idle: ["ready"],
  gated: ["ready"],
  backingOff: ["ready"],
  draining: ["closed"],
  closed: [],
} as const satisfies Record<ClaimState, readonly ClaimState[]>;

/** The states a claim loop may enter from `S`. */
export type ClaimTransition<S extends ClaimState> = (typeof CLAIM_TRANSITIONS)[S][number];

/** What a claim returns when it failed (logged, counted and reported). */
export const CLAIM_FAILED = -1;
/** What a claim returns when the claim gate let it take nothing (paused, rate window used up). */
export const CLAIM_GATED = -2;

/** The timing of a waiting row whose claim's timing is missing (never, while the two queues move together). */
const NO_CLAIM_TIMING: ClaimTiming = Object.freeze({ claimMs: 0, endedAt: 0 });

/** What runs the deliveries a claim loop starts (the subscription's `DeliveryRunner`). */
export interface DeliveryStarter {
  /**
   * Runs one delivery of `hold` in `slot`: frees the slot once its settlement is sent, and ends
   * it when the delivery is over. Never throws.
   */
  deliver(hold: HeldRow, claim: ClaimTiming, slot: WorkerSlot): void;
}

/** What a {@link DeliverySlot} tells its claim loop. */
interface SlotOwner {
  /** A slot was given back. */
  freed(): void;
  /** A delivery is over (its slot is freed next). */
  ended(slot: DeliverySlot): void;
}

/** One delivery's worker slot: an object of a class, not closures made per delivery. */
class DeliverySlot implements WorkerSlot {
  readonly hold: HeldRow;
  readonly #owner: SlotOwner;
  #taken = true;

  constructor(hold: HeldRow, owner: SlotOwner) {
    this.hold = hold;
    this.#owner = owner;
  }

  free(): void {
    if (!this.#taken) return;
    this.#taken = false;
    this.#owner.freed();
  }

  end(): void {
    this.#owner.ended(this);
    this.free();
  }
}

/** The settings of a subscription its claim loop reads. */
export interface ClaimSettings {
  /** How many deliveries run at once (`workers`). */
  readonly workers: number;
  /** The most rows one claim takes (`batch`). */
  readonly batch: number;
  /** How many rows more are claimed ahead, waiting for a worker (`prefetch`). */
  readonly prefetch: number;
  /** How long an idle loop sleeps between claims without a wake, in milliseconds (`pollInterval`). */
  readonly pollInterval: number;
}

/**
 * The most rows one claim asks for. With rows held ahead, a lease claim takes at most half the
 * room (or a batch): when more is free (at the start, or once the workers outran the claims), a
 * claim of the rest runs beside it, so two claims' round trips overlap. A row lock claim is not
 * split: each claim is a transaction holding a connection.
 */
export function mostPerClaim(form: ClaimFormName, settings: ClaimSettings): number {
  const { batch, prefetch } = settings;
  if (prefetch === 0 || form !== "lease") return batch;
  return Math.max(1, Math.min(batch, Math.ceil((settings.workers + prefetch) / 2)));
}

/**
 * The fewest rows a claim on a busy queue asks for. With rows held ahead and more than one worker,
 * a lease claim waits until the room is a claim's worth ({@link mostPerClaim}) less one row per
 * worker: the workers still have the rows held ahead to run, and a claim of a few rows costs the
 * database a statement and a commit as a claim of hundreds does. Otherwise any room is claimed
 * (one worker, or without `prefetch`, the next row's wait would be the claim's round trip).
 */
export function leastPerClaim(form: ClaimFormName, settings: ClaimSettings): number {
  if (settings.prefetch === 0 || form !== "lease" || settings.workers === 1) return 1;
  return Math.max(1, mostPerClaim(form, settings) - settings.workers);
}

/**
 * How many rows whose settlements are in flight a subscription holds beyond its capacity
 * (`workers + prefetch`): the capacity, or twice it for a lease subscription with `prefetch`.
 * There a claim's worth of acks goes in one statement, one statement at a time, while the claims
 * run beside it; with room for one capacity only, the claims would wait for the acks' commits (a
 * lease ack holds no connection, only the row until its commit). A row lock batch holds its
 * connection until its acks commit, and an advisory row its key: those stay within one capacity.
 */
export function settlingRoom(form: ClaimFormName, settings: ClaimSettings): number {
  const capacity = settings.workers + settings.prefetch;
  return form === "lease" && settings.prefetch > 0 ? 2 * capacity : capacity;
}

/**
 * How many rows the next claim may take: rows whose handlers have not sent their settlement
 * (running, `busy`, or waiting for a worker) and the rows claims in flight reserved stay within
 * `capacity` (`workers + prefetch`). A row whose settlement is in flight leaves room at once, so
 * the next claim starts without waiting for the settlement's commit; such rows are still `held`
 * until it commits, at most `settling` more ({@link settlingRoom}; the capacity by default).
 */
export function claimRoom(
  capacity: number,
  busy: number,
  waiting: number,
  held: number,
  reserved: number,
  settling: number = capacity,
): number {
  return Math.min(capacity - busy - waiting - reserved, capacity + settling - held - reserved);
}

/**
 * Whether a claim of `limit` rows, with `room` free, runs ahead (the loop goes on without
 * waiting for it): only while the queue is busy (`full`: the last claim found all it asked
 * for). Then slots it does not fill (a batch smaller than the free workers, as the row lock
 * form's default 1) get a claim beside it rather than wait for its round trip; and a claim as
 * large as a claim may be (`most`) cannot grow by waiting, so a slot freed meanwhile gets its
 * own claim in the turn in which it was freed (where an ack waits for the next claim within
 * that turn to go with it). A smaller claim is waited for instead, so that the room settled
 * rows free meanwhile adds up to the next claim (with `prefetch`, claims stay large).
 */
export function claimsAhead(full: boolean, limit: number, room: number, most: number): boolean {
  return full && (limit < room || limit === most);
}

/**
 * The state a claim loop enters after a claim it waited for returned `found` (rows, or
 * {@link CLAIM_FAILED}, {@link CLAIM_GATED}), with `running` claims still ahead: it claims
 * again at once after rows, and while claims ahead run (they wake it when they end).
 */
export function stateAfterClaim(found: number, running: number): "ready" | "idle" | "gated" | "backingOff" {
  if (found === CLAIM_FAILED) return "backingOff";
  if (found > 0 || running > 0) return "ready";
  return found === CLAIM_GATED ? "gated" : "idle";
}

/** How long an idle (or gated) loop sleeps: the poll interval, or less where a used-up rate window ends sooner. */
export function idleWaitMs(gateWaitMs: number | undefined, pollInterval: number): number {
  return gateWaitMs === undefined ? pollInterval : Math.min(gateWaitMs, pollInterval);
}

/** One subscription's claim loop, and the rows it holds until their deliveries start. */
export class ClaimScheduler {
  readonly #table: TableDefinition;
  readonly #subscription: Subscription;
  readonly #stats: SubscriptionStats;
  readonly #runtime: FormRuntime;
  readonly #deliveries: DeliveryStarter;
  readonly #settings: ClaimSettings;
  readonly #logger: Logger;
  readonly #observer: SubscriptionObserver;
  readonly #gate: ClaimGate | undefined;
  readonly #inWork: Set<HeldRow>;
  readonly #signal: WakeSignal;
  readonly #dueWake: DueWake;
  readonly #stopped: AbortController;
  readonly #slotFreed = new WakeSignal();
  readonly #capacity: number;
  /** Rows whose settlements are in flight that the loop holds beyond its capacity ({@link settlingRoom}). */
  readonly #settling: number;
  readonly #mostPerClaim: number;
  readonly #leastPerClaim: number;
  #state: ClaimState = "ready";
  /**
   * Worker slots taken: deliveries whose handlers run and have not settled yet. A delivery that
   * acks frees its slot when its settlement is sent (the handler returned, or called `settle`,
   * or its transaction body returned), not when the settlement commits: the next row starts
   * while the settlement is in flight (and, coalesced, waits for others). A retry or a dead
   * letter frees it once its row is given back.
   */
  #busy = 0;
  /** Rows claimed ahead (prefetch), in claim order, waiting for a worker; each with its claim's time. */
  readonly #waiting: HeldRow[] = [];
  /** The claim timing of each row of {@link ClaimScheduler.#waiting}, at the same index (one object a claim). */
  readonly #waitingClaims: ClaimTiming[] = [];
  /** How many deliveries run (started, not ended). */
  #running = 0;
  /** Resolves the wait of {@link ClaimScheduler.close} for the deliveries running, once none runs. */
  #noneRunning: (() => void) | undefined;
  /** What the slots of this loop's deliveries tell it. */
  readonly #slots: SlotOwner;
  #open = true;
  #loop: Promise<void> | undefined;
  /** Claims running without the loop waiting for them (claims ahead). */
  readonly #ahead = new Set<Promise<void>>();
  /** The slots every claim in flight has reserved: held plus reserved never passes `workers + prefetch`. */
  #reserved = 0;
  /** Whether the last claim found as many rows as it asked for: the queue has more. */
  #full = false;
  /** Claims begun so far; an idle waiter counts claims begun after it. */
  #claimCount = 0;
  /** Claims running now (more than one while the loop claims ahead). */
  #claiming = 0;
  readonly #idleWaiters = new Set<{ readonly after: number; readonly resolve: () => void }>();
  /** How long the gate asked the loop to wait before the next claim (a used-up rate window). */
  #gateWaitMs: number | undefined;

  constructor(args: {
    table: TableDefinition;
    /** The subscription the events name. */
    subscription: Subscription;
    /** The subscription's counters, moved here. */
    stats: SubscriptionStats;
    runtime: FormRuntime;
    /** Runs the deliveries this loop starts. */
    deliveries: DeliveryStarter;
    settings: ClaimSettings;
    logger: Logger;
    observer: SubscriptionObserver;
    gate: ClaimGate | undefined;
    /** The rows in work, the claim loop's wake and due-time wake, shared with the deliveries. */
    shared: DeliveryShared;
    /** Aborts `shared.stopped`: {@link ClaimScheduler.close} does. */
    stop: AbortController;
  }) {
    this.#table = args.table;
    this.#subscription = args.subscription;
    this.#stats = args.stats;
    this.#runtime = args.runtime;
    this.#deliveries = args.deliveries;
    this.#settings = args.settings;
    this.#logger = args.logger;
    this.#observer = args.observer;
    this.#gate = args.gate;
    this.#inWork = args.shared.inWork;
    this.#signal = args.shared.signal;
    this.#dueWake = args.shared.dueWake;
    this.#stopped = args.stop;
    this.#capacity = args.settings.workers + args.settings.prefetch;
    this.#settling = settlingRoom(args.table.form, args.settings);
    this.#mostPerClaim = mostPerClaim(args.table.form, args.settings);
    this.#leastPerClaim = leastPerClaim(args.table.form, args.settings);
    this.#slots = {
      freed: () => {
        this.#busy -= 1;
        if (this.#waiting.length > 0) this.#startWaiting();
        this.#slotFreed.wake();
      },
      ended: (slot) => {
        this.#inWork.delete(slot.hold);
        this.#running -= 1;
        if (this.#running === 0 && this.#noneRunning !== undefined) this.#noneRunning();
        this.#slotFreed.wake();
      },
    };
  }

  /** The loop's state now. */
  get state(): ClaimState {
    return this.#state;
  }

  /** Rows held: in work, plus claimed ahead and waiting for a worker. */
  get held(): number {
    return this.#inWork.size + this.#waiting.length;
  }

  /** Starts the claim loop. */
  start(): void {
    this.#loop = this.#claimLoop();
  }

  /** Wakes the claim loop: a row may be due. */
  wake(): void {
    this.#signal.wake();
  }

  /** Resolves once a claim begun after this call found nothing, with nothing held (or at the stop). */
  idle(): Promise<void> {
    if (!this.#open) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idleWaiters.add({ after: this.#claimCount, resolve });
      this.#signal.wake();
    });
  }

  /**
   * Stops claiming and waits for the loop; gives back the rows claimed ahead, then waits up to
   * `timeout` ms for the deliveries, and gives up those still running (their settlements then
   * change nothing).
   */
  async close(timeout: number): Promise<void> {
    this.#open = false;
    this.#stopped.abort();
    this.#dueWake.close();
    for (const waiter of this.#idleWaiters) waiter.resolve();
    this.#idleWaiters.clear();
    this.#signal.wake();
    this.#slotFreed.wake();
    await this.#loop;
    if (this.#state === "ready") this.#to("ready", "draining");
    // Rows claimed ahead whose handlers never started go back at once (a row lock batch cannot
    // commit before they do).
    await this.#giveBackWaiting();
    if (await this.#outlasted(timeout)) {
      const reason = new ClosedError(
        `Table "${this.#table.name}" (${this.#table.form} form): the broker closed before this delivery settled; it was given up and its settlement changes nothing.`,
        { table: this.#table.name },
      );
      const held = [...this.#inWork];
      this.#inWork.clear();
      await Promise.allSettled(held.map((hold) => hold.abandon(reason)));
    }
    this.#to("draining", "closed");
  }

  /** Whether the deliveries running now outlast `timeout` ms. */
  async #outlasted(timeout: number): Promise<boolean> {
    if (this.#running === 0) return false;
    const all = new Promise<void>((resolve) => {
      this.#noneRunning = resolve;
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeout);
      }),
    ]);
    clearTimeout(timer);
    return timedOut;
  }

  /** Moves the loop from `from` (the state it is in) to `to`, one of the transitions `from` allows. */
  #to<S extends ClaimState>(_from: S, to: ClaimTransition<S>): void {
    this.#state = to;
  }

  async #claimLoop(): Promise<void> {
    const { pollInterval } = this.#settings;
    const most = this.#mostPerClaim;
    let ranSince = performance.now();
    while (this.#open) {
      const room = claimRoom(
        this.#capacity,
        this.#busy,
        this.#waiting.length,
        this.held,
        this.#reserved,
        this.#settling,
      );
      // On a busy queue, room for fewer rows than a claim's least waits for more (see leastPerClaim).
      if (room <= 0 || (this.#full && room < this.#leastPerClaim)) {
        // Every finished delivery, finished claim and stop wakes this wait: no timer to arm and clear.
        this.#to("ready", "awaitingRoom");
        await this.#slotFreed.next(this.#slotFreed.generation);
        this.#to("awaitingRoom", "ready");
        continue;
      }
      const generation = this.#signal.generation;
      const limit = Math.min(room, most);
      this.#reserved += limit;
      const claiming = this.#claimOnce(limit).finally(() => {
        this.#reserved -= limit;
      });
      // A driver that answers synchronously (SQLite) and handlers that do too make the whole
      // loop one chain of promise jobs, in which no timer runs (lease extension, the close
      // timeout, the user's own): give the event loop a turn every few milliseconds. The turn
      // comes once this claim has started, never before it: the claim takes the acks waiting
      // now, where a turn first would send them alone at its start and then the claim alone,
      // two commits where one does. A stop during the turn is seen below.
      if (performance.now() - ranSince > YIELD_EVERY_MS) {
        this.#to("ready", "yielding");
        await new Promise<void>((resolve) => setImmediate(resolve));
        ranSince = performance.now();
        this.#to("yielding", "ready");
      }
      if (claimsAhead(this.#full, limit, room, most)) {
        // Claims in flight stay within the room: each reserves its limit.
        const running: Promise<void> = claiming.then((found) => {
          this.#full = found === limit;
          this.#ahead.delete(running);
          this.#slotFreed.wake();
        });
        this.#ahead.add(running);
        this.#to("ready", "ready");
        continue;
      }
      this.#to("ready", "claiming");
      const found = await claiming;
      this.#full = found === limit;
      // A stop that came during the claim woke the signal before this wait could see it.
      if (!this.#open) {
        this.#to("claiming", "draining");
        break;
      }
      const next = stateAfterClaim(found, this.#ahead.size);
      this.#to("claiming", next);
      if (next === "ready") continue;
      if (next === "backingOff") {
        await this.#signal.wait(pollInterval, this.#signal.generation);
      } else {
        // A used-up rate window ends sooner than the poll interval, maybe.
        const gateWait = this.#gateWaitMs;
        this.#gateWaitMs = undefined;
        await this.#signal.wait(idleWaitMs(gateWait, pollInterval), generation);
      }
      this.#to(next, "ready");
    }
    if (this.#state === "ready") this.#to("ready", "draining");
    await Promise.allSettled([...this.#ahead]);
  }

  /**
   * One claim of up to `limit` rows: starts a delivery for each row it takes. Returns how many it
   * took, {@link CLAIM_GATED} when the gate let it take none, or {@link CLAIM_FAILED} (logged,
   * counted and reported here).
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
          return CLAIM_GATED;
        }
      }
      held = await this.#runtime.claim(admission === undefined ? limit : Math.min(limit, admission.granted));
    } catch (error) {
      this.#claimFailed(error);
      return CLAIM_FAILED;
    } finally {
      this.#claiming -= 1;
    }
    if (admission !== undefined && held.length < admission.granted)
      void this.#gate?.unused(admission, held.length);
    this.#stats.claimed += held.length;
    const endedAt = performance.now();
    const claimMs = endedAt - claimStart;
    const timing: ClaimTiming = { claimMs, endedAt };
    if (held.length > 0) {
      this.#observer.instrumentation?.claimed(this.#table, held.length, claimMs);
      this.#traceClaim(held, claimMs);
    }
    const { workers } = this.#settings;
    for (const hold of held) {
      if (this.#busy < workers && this.#waiting.length === 0) this.#start(hold, timing);
      else {
        this.#waiting.push(hold);
        this.#waitingClaims.push(timing);
      }
    }
    if (this.#waiting.length > 0) this.#startWaiting();
    if (held.length === 0) this.#foundNothing(claim);
    return held.length;
  }

  /** Counts, logs and reports a claim that failed. */
  #claimFailed(error: unknown): void {
    this.#stats.claimErrors += 1;
    this.#logger.error(
      `Table "${this.#table.name}" (${this.#table.form} form): a claim failed; trying again after the poll interval.`,
      { err: error, table: this.#table.name },
    );
    const { events } = this.#observer;
    if (events.has("claimError"))
      events.emit("claimError", { table: this.#table, subscription: this.#subscription, error });
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

  /**
   * Starts waiting rows while workers are free (and the subscription runs); drops rows whose
   * hold was lost meanwhile, and gives back lease rows whose lease ran out by the host's clock
   * (after a stall, before an extension could find out whether another claim took them).
   */
  #startWaiting(): void {
    const { workers } = this.#settings;
    while (this.#open && this.#busy < workers) {
      const hold = this.#waiting.shift();
      const timing = this.#waitingClaims.shift() ?? NO_CLAIM_TIMING;
      if (hold === undefined) return;
      // A lease lost (or a batch rolled back) while the row waited: it is no longer ours to run.
      if (hold.aborted) continue;
      if (hold.expired === true) {
        this.#giveBackExpired(hold);
        continue;
      }
      this.#start(hold, timing);
    }
  }

  /** Gives back a waiting lease row whose lease ran out (released where it still holds it, due again). */
  #giveBackExpired(hold: HeldRow): void {
    const reason = new LeaseLostError(
      `Table "${this.#table.name}" (lease form): the lease of row ${String(hold.row.id)}, claimed ahead, ran out before a worker was free; it was given back unhandled.`,
      { table: this.#table.name },
    );
    hold.giveBack(reason).catch((error: unknown) => {
      this.#logger.error(
        `Table "${this.#table.name}": giving back row ${String(hold.row.id)}, whose lease ran out while it waited, failed; it is due again once its lease ran out.`,
        { err: error, table: this.#table.name },
      );
    });
  }

  /** Starts one delivery. */
  #start(hold: HeldRow, claim: ClaimTiming): void {
    this.#inWork.add(hold);
    this.#busy += 1;
    const slot = new DeliverySlot(hold, this.#slots);
    this.#running += 1;
    // Never throws; the delivery ends its slot itself.
    this.#deliveries.deliver(hold, claim, slot);
  }

  /** Gives back every row waiting for a worker (the subscription stopped); failures are logged. */
  async #giveBackWaiting(): Promise<void> {
    const waiting = this.#waiting.splice(0);
    this.#waitingClaims.length = 0;
    if (waiting.length === 0) return;
    const reason = new ClosedError(
      `Table "${this.#table.name}" (${this.#table.form} form): the subscription stopped before this row, claimed ahead, reached a worker; it was given back unhandled.`,
      { table: this.#table.name },
    );
    const results = await Promise.allSettled(waiting.map((hold) => hold.giveBack(reason)));
    results.forEach((result, index) => {
      if (result.status === "rejected") {
        this.#logger.error(
          `Table "${this.#table.name}": giving back row ${String(waiting[index]?.row.id)}, claimed ahead, failed; it comes back as its form brings back a crashed delivery's row.`,
          { err: result.reason, table: this.#table.name },
        );
      }
    });
    this.#slotFreed.wake();
  }

  /** Debug trace of a claim. */
  #traceClaim(held: readonly HeldRow[], claimMs: number): void {
    const { logger } = this.#observer;
    if (logger.debug === undefined || !logger.isDebugEnabled()) return;
    logger.debug(`Table "${this.#table.name}" (${this.#table.form} form): claimed ${held.length} row(s).`, {
      table: this.#table.name,
      ids: held.map((hold) => hold.row.id),
      claimMs,
    });
  }
}
