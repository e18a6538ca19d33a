/**
 * The lease form in the broker: claims write an expiry and commit at once; a keeper extends
 * every lease in work each half lease; a settlement names the token it holds now and fails with
 * `LEASE_LOST` where the row holds another.
 *
 * Acks travel by the {@link AckCarrier}. Where the claimer has `claimWithAcks`, an ack waits,
 * within the turn, for the subscription's next claim and goes in its transaction (one commit for
 * the acks and the claim); acks no claim took go alone at the end of the turn. Otherwise, where
 * it has `settleMany`, a lone ack goes at once and acks ready while a send runs go together
 * next. Acks that go alone go as one `settleMany` (each row fenced by its own token: a row
 * whose lease was taken over fails alone with `LEASE_LOST`), or one `settle` each where the
 * claimer has no `settleMany`. Should a carrying claim fail, nothing of it was committed: the
 * acks go alone and the claim runs again, so each reports its own error.
 *
 * A claim may take back a row this subscription still holds, once its lease ran out while the
 * process stood still (its settlement queued, or its handler still running with extension off
 * or late): the hold in work keeps the row under the claim's new token (its queued settlement
 * and the extensions use it; a settlement sent with the old token just before is sent again
 * with the new one) and the row is not delivered a second time. A hold that lets its row go (a
 * retry's release, a delay) is finished once it sends that, and a transactional one once its
 * settlement is fenced: a claim that takes the row after it delivers the row anew, even where
 * the claim's answer comes back before the release's (or the commit's).
 *
 * @module
 */
import { AckCarrier, lastOf, type NonEmpty } from "./ack-carrier.js";
import type { ClockSkewMonitor } from "./clock-skew.js";
import { BrokerError, LeaseLostError } from "./errors.js";
import {
  type Acks,
  type Claimed,
  type HeldLease,
  type LeaseClaimer,
  type LeaseClaimRequest,
  MAX_COALESCED_SETTLEMENTS,
  type Offering,
  offers,
} from "./forms.js";
import { answerWhen, type FormRuntime, type HeldRow, type SettleAnswer } from "./held-row.js";
import { LazyAbort } from "./lazy-abort.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow, RowId } from "./rows.js";
import { type AckSettlement, isAckSettlement, type Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import { ceilToSecond, type LeaseToken, leaseExpiry } from "./tokens.js";
import type { TransactionWork } from "./transactional.js";

/** What a lease runtime may be given besides its claimer: the host clock and a clock-skew check. */
export interface LeaseRuntimeOptions {
  /** The host's clock (default `() => new Date()`): claims and expiries are computed from it. */
  readonly clock?: () => Date;
  /** Checked before each claim: a host whose clock is too far from the database's claims nothing. */
  readonly skew?: ClockSkewMonitor;
}

/** The broker's runtime for lease tables. */
export class LeaseRuntime implements FormRuntime {
  readonly #claimer: LeaseClaimer;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  readonly #held = new Set<LeaseHold>();
  /** Holds not finished yet (settling included, but not once the row was let go), by row id: a claim that takes one back adopts it. */
  readonly #own = new Map<string, LeaseHold>();
  /** The claimer's claims (`claim`, `claimWithAcks`) in flight. */
  readonly #claims = new Set<Promise<unknown>>();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #clock: () => Date;
  /** The host's clock in milliseconds: `Date.now` where no clock was given (no `Date` made per read). */
  readonly #nowMs: () => number;
  readonly #skew: ClockSkewMonitor | undefined;
  #extending = false;
  /**
   * Whether a claim ever took a row whose earlier hold was still unfinished but could not keep it
   * (lost, given up): only then can two acks of one row wait at once (see {@link nextAcks}).
   */
  #heldTwice = false;
  /** Where acks wait to go together, or with the next claim; `undefined`: each goes alone at once. */
  readonly #acks: AckCarrier<LeaseHold> | undefined;
  /** The claimer where it carries acks with a claim. */
  readonly #carrying: Offering<LeaseClaimer, "claimWithAcks"> | undefined;
  /** The claimer where it runs transactional handlers. */
  readonly #transactional: Offering<LeaseClaimer, "transaction"> | undefined;

  /**
   * @param extend whether to extend leases in work each half lease (a subscription may turn it
   * off so that a handler never outlives its lease).
   */
  constructor(
    claimer: LeaseClaimer,
    table: TableDefinition,
    logger: Logger,
    extend: boolean,
    options: LeaseRuntimeOptions = {},
  ) {
    const clock = options.clock;
    this.#clock = clock ?? (() => new Date());
    this.#nowMs = clock === undefined ? Date.now : () => clock().getTime();
    this.#skew = options.skew;
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
    this.#carrying = offers(claimer, "claimWithAcks") ? claimer : undefined;
    this.#transactional = offers(claimer, "transaction") ? claimer : undefined;
    this.#acks =
      this.#carrying === undefined && claimer.settleMany === undefined
        ? undefined
        : new AckCarrier<LeaseHold>({
            carried: this.#carrying !== undefined,
            oneAtATime: true,
            take: (waiting) => nextAcks(waiting, this.#heldTwice),
            alone: (acks) => this.#settleAcks(acks),
          });
    if (extend) {
      this.#timer = setInterval(() => void this.#extendAll(), (table.leaseSeconds * 1000) / 2);
    }
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    if (this.#skew !== undefined && !(await this.#skew.mayClaim())) return [];
    const now = this.#clock();
    const request = { limit, now, expiry: leaseExpiry(now, this.#table.leaseSeconds) };
    const alone = (): Promise<readonly Claimed<LeaseToken>[]> => this.#inFlight(this.#claimer.claim(request));
    const claimed =
      this.#acks === undefined
        ? await alone()
        : await this.#acks.claim((acks) => this.#claimWithAcks(acks, request), alone);
    const holds: LeaseHold[] = [];
    for (const { row, token } of claimed) {
      const key = String(row.id);
      // Taken back from this subscription itself (see the module's notes): the hold in work keeps it.
      const own = this.#own.get(key);
      if (own?.adopt(token) === true) continue;
      if (own !== undefined) this.#heldTwice = true;
      const hold = new LeaseHold(this, row, token, key);
      this.#held.add(hold);
      this.#own.set(key, hold);
      holds.push(hold);
    }
    return holds;
  }

  /** `claim`, kept among the claims in flight until it returns. */
  #inFlight<T>(claim: Promise<T>): Promise<T> {
    this.#claims.add(claim);
    const done = (): void => {
      this.#claims.delete(claim);
    };
    claim.then(done, done);
    return claim;
  }

  /**
   * Resolves once the claims in flight now have returned and their rows were handed out (a turn
   * later): a settlement or an extension that found its row under another token asks this first,
   * as the token may be this subscription's own claim's, which its hold then adopted.
   */
  async #claimsReturned(): Promise<void> {
    if (this.#claims.size === 0) return;
    await Promise.allSettled([...this.#claims]);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** @internal the hold is finished (settled, failed, given back or up): no claim adopts it now. */
  finished(hold: LeaseHold): void {
    if (this.#own.get(hold.key) === hold) this.#own.delete(hold.key);
  }

  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    for (const hold of this.#held) hold.controller.abort();
    this.#held.clear();
    this.#own.clear();
    await this.#claimer.close();
  }

  /** @internal the host's clock, in milliseconds. */
  now(): number {
    return this.#nowMs();
  }

  /** @internal */
  forget(hold: LeaseHold): void {
    this.#held.delete(hold);
  }

  /** @internal whether acks go by the carrier (see the module's notes); else each goes on its own. */
  get carriesAcks(): boolean {
    return this.#acks !== undefined;
  }

  /**
   * @internal sends the ack `hold` holds by the carrier (see the module's notes); the hold's
   * {@link LeaseHold.acked} or {@link LeaseHold.ackFailed} answers it.
   */
  ack(hold: LeaseHold): void {
    this.#acks?.add(hold);
  }

  /** @internal one settlement on its own; sent again should the hold have adopted a new token meanwhile. */
  async settleAlone(hold: LeaseHold, settlement: Settlement): Promise<void> {
    for (;;) {
      const sent = hold.token;
      try {
        await this.#claimer.settle(hold.row.id, sent, settlement);
        return;
      } catch (error) {
        if (!BrokerError.is(error, "LEASE_LOST")) throw error;
        await this.#claimsReturned();
        if (hold.token === sent) throw error;
      }
    }
  }

  /** A claim that carries `acks` (`claimWithAcks`): one transaction for both (a failure: see `AckCarrier.claim`). */
  async #claimWithAcks(
    acks: NonEmpty<LeaseHold>,
    request: LeaseClaimRequest,
  ): Promise<readonly Claimed<LeaseToken>[]> {
    const claimer = this.#carrying;
    if (claimer === undefined) return this.#claimer.claim(request);
    const sent = tokensOf(acks);
    const result = await this.#inFlight(claimer.claimWithAcks(heldOf(acks, sent), request));
    // Not awaited: the claim's own rows are handed out first (an ack may wait for that).
    void this.#answer(acks, result.settled, sent);
    return result.claimed;
  }

  /**
   * Settles a group of acks alone: one `settleMany` for more than one where the claimer has it,
   * else one `settle` each; never throws. A `settleMany` that fails changed no row: each ack then
   * goes on its own, so that a row the database refuses fails alone and the others settle.
   */
  async #settleAcks(acks: NonEmpty<LeaseHold>): Promise<void> {
    const claimer = this.#claimer;
    if (acks.length === 1) return this.#settleAck(acks[0]);
    if (!offers(claimer, "settleMany")) {
      await Promise.all(acks.map((hold) => this.#settleAck(hold)));
      return;
    }
    let settled: readonly boolean[];
    const sent = tokensOf(acks);
    try {
      settled = await claimer.settleMany(heldOf(acks, sent));
    } catch {
      await Promise.all(acks.map((ack) => this.#settleAcks([ack])));
      return;
    }
    await this.#answer(acks, settled, sent);
  }

  /** One ack on its own (`settle`), answered. */
  async #settleAck(hold: LeaseHold): Promise<void> {
    try {
      await this.settleAlone(hold, ackOf(hold));
    } catch (error) {
      hold.ackFailed(error);
      return;
    }
    hold.acked();
  }

  /**
   * Resolves each ack the database settled; fails the others with `LEASE_LOST`, but for a hold
   * that adopted a new token since its ack was `sent`: that ack waits to go again.
   */
  async #answer(
    acks: readonly LeaseHold[],
    settled: readonly boolean[],
    sent: readonly LeaseToken[],
  ): Promise<void> {
    let all = true;
    for (let index = 0; index < settled.length && all; index += 1) all = settled[index] === true;
    if (all && settled.length === acks.length) {
      for (let index = 0; index < acks.length; index += 1) (acks[index] as LeaseHold).acked();
      return;
    }
    await this.#claimsReturned();
    acks.forEach((hold, index) => {
      if (settled[index] === true) hold.acked();
      else if (hold.token !== sent[index]) this.#acks?.add(hold);
      else hold.ackFailed(this.lost(hold));
    });
  }

  /**
   * @internal moves the lease of `hold` to `until` (a whole second) and lets the row go: no
   * claim takes it before then (a retry's delay on a table without `runAt`).
   */
  async extendTo(hold: LeaseHold, until: Date): Promise<void> {
    const [token] = await this.#claimer.extend([{ id: hold.row.id, token: hold.token }], until);
    if (token === null || token === undefined) {
      await this.#claimsReturned();
      throw this.lost(hold);
    }
  }

  /** @internal the claimer's transaction method, where it has one. */
  get transactional(): boolean {
    return this.#transactional !== undefined;
  }

  /** @internal runs a transactional handler's work and the fenced settlement of one hold in one transaction. */
  transactionHold(hold: LeaseHold, work: TransactionWork, fence: () => Promise<LeaseToken>): Promise<void> {
    const claimer = this.#transactional;
    if (claimer === undefined) throw new TypeError("rowclaim: the claimer runs no transactional handlers");
    return claimer.transaction(hold.row.id, work, fence, hold.signal);
  }

  /** @internal */
  lost(hold: LeaseHold): LeaseLostError {
    return new LeaseLostError(
      `Table "${this.#table.name}" (lease form): row ${String(hold.row.id)} no longer holds this delivery's lease (expiry ${hold.token.expiry.toISOString()}); another claim took it after the lease ran out. The settlement changed nothing. Make the lease longer than the handler can stall, or keep lease extension on.`,
      { table: this.#table.name },
    );
  }

  async #extendAll(): Promise<void> {
    if (this.#extending) return;
    const holds = [...this.#held].filter((hold) => !hold.settling);
    if (holds.length === 0) return;
    this.#extending = true;
    const expiry = leaseExpiry(this.#clock(), this.#table.leaseSeconds);
    const sent = holds.map((hold) => hold.token);
    const running = this.#claimer.extend(
      holds.map((hold, index) => ({ id: hold.row.id, token: sent[index] ?? hold.token })),
      expiry,
    );
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    for (const hold of holds) hold.extension = settled;
    try {
      const tokens = await running;
      if (tokens.some((token) => token === null || token === undefined)) await this.#claimsReturned();
      holds.forEach((hold, index) => {
        const token = tokens[index];
        // Taken back by this subscription's own claim meanwhile: the hold has the claim's token.
        if (hold.token !== sent[index]) return;
        if (token === null || token === undefined) {
          const error = this.lost(hold);
          hold.lostError = error;
          this.#held.delete(hold);
          this.finished(hold);
          hold.controller.abort(error);
        } else {
          hold.token = token;
        }
      });
    } catch (error) {
      this.#logger.error(
        `Table "${this.#table.name}": extending ${holds.length} lease(s) failed; trying again at the next half lease.`,
        {
          err: error,
        },
      );
    } finally {
      for (const hold of holds) hold.extension = undefined;
      this.#extending = false;
    }
  }
}

/**
 * Takes the next group of waiting acks, in order: at most {@link MAX_COALESCED_SETTLEMENTS},
 * and never one row twice. A row can wait twice when it was taken over and claimed again by
 * this subscription while its stale ack waited: the two acks hold different tokens and must be
 * fenced one after the other, or a driver matching results by id would report both settled.
 * That needs a claim that found the row's earlier hold unfinished (`heldTwice`); until one did,
 * no row is looked for twice.
 */
function nextAcks(waiting: LeaseHold[], heldTwice: boolean): LeaseHold[] {
  if (waiting.length === 1) return waiting.splice(0, 1);
  if (!heldTwice) return waiting.splice(0, MAX_COALESCED_SETTLEMENTS);
  const ids = new Set<RowId>();
  let later: LeaseHold[] | undefined;
  let taken = 0;
  for (let index = 0; index < waiting.length; index += 1) {
    const ack = waiting[index] as LeaseHold;
    const id = ack.row.id;
    if (taken >= MAX_COALESCED_SETTLEMENTS || ids.has(id)) {
      later ??= [];
      later.push(ack);
    } else {
      ids.add(id);
      // In place: the group is the front of `waiting`, in order, until a row waits twice.
      waiting[taken] = ack;
      taken += 1;
    }
  }
  const group = waiting.splice(0, taken);
  waiting.length = 0;
  if (later !== undefined) for (const ack of later) waiting.push(ack);
  return group;
}

/**
 * The acks of `acks` as the claimer takes them: each row with the token `sent` gives it (one
 * settlement for all, the latest ack's).
 */
function heldOf(acks: NonEmpty<LeaseHold>, sent: readonly LeaseToken[]): Acks<HeldLease> {
  return {
    rows: heldPairsOf(acks, sent),
    settlement: ackOf(lastOf(acks)),
  };
}

/**
 * The token each of `acks` holds now. This and {@link heldPairsOf} are loops, not closures made
 * per call (the conformance package's DRIVERS.md, "The hot path").
 */
function tokensOf(acks: readonly LeaseHold[]): LeaseToken[] {
  const tokens = new Array<LeaseToken>(acks.length);
  for (let index = 0; index < acks.length; index += 1) tokens[index] = (acks[index] as LeaseHold).token;
  return tokens;
}

/** Each of `acks` as the claimer takes it: its row's id and the token `sent` for it. */
function heldPairsOf(acks: readonly LeaseHold[], sent: readonly LeaseToken[]): HeldLease[] {
  const pairs = new Array<HeldLease>(acks.length);
  for (let index = 0; index < acks.length; index += 1) {
    const hold = acks[index] as LeaseHold;
    pairs[index] = { id: hold.row.id, token: sent[index] ?? hold.token };
  }
  return pairs;
}

/** The ack a hold in the carrier sends (set before it goes in). */
function ackOf(hold: LeaseHold): AckSettlement {
  const { ack } = hold;
  if (ack === undefined) throw new TypeError("rowclaim: a lease hold waits to ack without an ack");
  return ack;
}

class LeaseHold implements HeldRow {
  readonly controller = new LazyAbort();
  token: LeaseToken;
  /** The extension in flight that includes this hold, if any: a settlement waits for it. */
  extension: Promise<void> | undefined;
  settling = false;
  lostError: LeaseLostError | undefined;
  /** Why the broker gave the hold up (closing past its timeout), if it did. */
  abandoned: BrokerError | undefined;
  readonly #runtime: LeaseRuntime;
  readonly row: ClaimedRow;
  /** The row's id as the runtime's maps key it. */
  readonly key: string;
  /** The ack this hold sends by the runtime's carrier, once it settles by one. */
  ack: AckSettlement | undefined;
  /** Answers the ack sent by the carrier: what `settleInto` was given, or the promise `settle` returned. */
  #answer: SettleAnswer | undefined;

  constructor(runtime: LeaseRuntime, row: ClaimedRow, token: LeaseToken, key: string) {
    this.#runtime = runtime;
    this.row = row;
    this.token = token;
    this.key = key;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.controller.aborted;
  }

  get leaseExpiry(): Date {
    return this.token.expiry;
  }

  get expired(): boolean {
    return this.token.expiry.getTime() <= this.#runtime.now();
  }

  /**
   * A claim of this subscription took the row back with `token` while this hold was not
   * finished: the hold keeps the row under it. `false` where the hold was lost or given up.
   */
  adopt(token: LeaseToken): boolean {
    if (this.lostError !== undefined || this.abandoned !== undefined || this.controller.aborted) return false;
    this.token = token;
    return true;
  }

  /**
   * Settles the row with the hold's token once no extension including it runs: an ack goes by
   * the runtime's carrier (no frame of this method waits for it: {@link LeaseHold.acked} and
   * {@link LeaseHold.ackFailed} answer it), anything else on its own.
   */
  settle(settlement: Settlement): Promise<void> {
    this.settling = true;
    return this.extension === undefined ? this.#send(settlement) : this.#sendAfterExtension(settlement);
  }

  /**
   * {@link LeaseHold.settle} that answers `answer`: an ack the carrier takes makes no promise
   * (the carrier's answer calls `answer`); anything else goes as `settle` does.
   */
  settleInto(settlement: Settlement, answer: SettleAnswer): void {
    if (this.extension !== undefined || !this.#carried(settlement)) {
      answerWhen(this.settle(settlement), answer);
      return;
    }
    this.settling = true;
    this.#runtime.forget(this);
    this.#waitForAck(settlement, answer);
  }

  /** Whether `settlement` goes by the runtime's carrier: an ack of a hold whose lease was not lost, where acks are carried. */
  #carried(settlement: Settlement): settlement is AckSettlement {
    return this.lostError === undefined && this.#runtime.carriesAcks && isAckSettlement(settlement);
  }

  /** Hands the ack to the runtime's carrier; `answer` hears how it went. */
  #waitForAck(settlement: AckSettlement, answer: SettleAnswer): void {
    this.ack = settlement;
    this.#answer = answer;
    this.#runtime.ack(this);
  }

  async #sendAfterExtension(settlement: Settlement): Promise<void> {
    await this.extension;
    return this.#send(settlement);
  }

  #send(settlement: Settlement): Promise<void> {
    const runtime = this.#runtime;
    runtime.forget(this);
    if (this.lostError !== undefined) return Promise.reject(this.#failed(this.lostError));
    // A release lets the row go: from its commit on, a claim of this subscription may take the
    // row, and that claim's answer may come back before this one (two connections). That row is
    // a new delivery, not this hold's to adopt: adopted, it would be delivered by no one.
    if (settlement.kind === "release") runtime.finished(this);
    if (!this.#carried(settlement)) return this.#sendAlone(settlement);
    return new Promise<void>((resolve, reject) => {
      this.#waitForAck(settlement, { landed: resolve, failed: reject });
    });
  }

  async #sendAlone(settlement: Settlement): Promise<void> {
    try {
      await this.#runtime.settleAlone(this, settlement);
    } catch (error) {
      throw this.#failed(error);
    }
    this.#runtime.finished(this);
  }

  /** The hold's settlement failed with `error`: a lost lease aborts the hold; the hold is finished. Returns `error`. */
  #failed(error: unknown): unknown {
    if (BrokerError.is(error, "LEASE_LOST")) this.controller.abort(error);
    this.#runtime.finished(this);
    return error;
  }

  /** @internal the ack sent by the carrier is committed. */
  acked(): void {
    this.#runtime.finished(this);
    const answer = this.#answer;
    this.#answer = undefined;
    answer?.landed();
  }

  /** @internal the ack sent by the carrier failed with `error`. */
  ackFailed(error: unknown): void {
    const answer = this.#answer;
    this.#answer = undefined;
    answer?.failed(this.#failed(error));
  }

  /**
   * Runs a transactional handler's work in one transaction with the settlement, fenced by the
   * token the hold has when the work is done: extensions go on while the body runs, then stop.
   */
  get transaction(): ((work: TransactionWork) => Promise<void>) | undefined {
    // One method on the prototype, not a closure made for every hold.
    return this.#runtime.transactional ? this.#transaction : undefined;
  }

  async #transaction(work: TransactionWork): Promise<void> {
    if (this.lostError !== undefined) {
      this.#runtime.forget(this);
      throw this.lostError;
    }
    const fence = async (): Promise<LeaseToken> => {
      this.settling = true;
      if (this.extension !== undefined) await this.extension;
      this.#runtime.forget(this);
      if (this.lostError !== undefined) throw this.lostError;
      // Given up by a broker closing past its timeout: the body's writes roll back.
      if (this.abandoned !== undefined) throw this.abandoned;
      // The settlement is fenced by this token now: a claim that takes the row from here on (once
      // the commit let it go, or before it, which the fence then fails) delivers it anew (see `#send`).
      this.#runtime.finished(this);
      return this.token;
    };
    try {
      await this.#runtime.transactionHold(this, work, fence);
      this.#runtime.finished(this);
    } catch (error) {
      if (BrokerError.is(error, "LEASE_LOST")) {
        this.#runtime.forget(this);
        this.#runtime.finished(this);
        this.controller.abort(error);
      }
      throw error;
    }
  }

  /**
   * Retries the row after a delay without a `runAt` column: its lease is moved to `until`
   * (rounded up to a whole second) and the row let go; it is due again once that lease runs
   * out, and the claim that takes it then counts the attempt, as after a release.
   */
  async delay(until: Date): Promise<void> {
    this.settling = true;
    try {
      if (this.extension !== undefined) await this.extension;
      this.#runtime.forget(this);
      if (this.lostError !== undefined) throw this.lostError;
      // The row goes (due at `until`): a claim that takes it then delivers it anew (see `#send`).
      this.#runtime.finished(this);
      await this.#runtime.extendTo(this, ceilToSecond(until.getTime()));
    } catch (error) {
      if (BrokerError.is(error, "LEASE_LOST")) this.controller.abort(error);
      throw error;
    } finally {
      this.#runtime.finished(this);
    }
  }

  async giveBack(reason: BrokerError): Promise<void> {
    this.settling = true;
    if (this.extension !== undefined) await this.extension;
    this.#runtime.forget(this);
    this.#runtime.finished(this);
    this.controller.abort(reason);
    if (this.lostError !== undefined) return;
    try {
      await this.#runtime.settleAlone(this, { kind: "release", runAt: null });
    } catch (error) {
      // Taken over meanwhile: the new owner has it, which is all giving back asks.
      if (!BrokerError.is(error, "LEASE_LOST")) throw error;
    }
  }

  async abandon(reason: BrokerError): Promise<void> {
    this.#runtime.forget(this);
    this.#runtime.finished(this);
    this.abandoned = reason;
    this.controller.abort(reason);
  }
}
