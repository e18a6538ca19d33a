/**
 * The lease form in the broker: claims write an expiry and commit at once; a keeper extends
 * every lease in work each half lease; a settlement names the token it holds now and fails with
 * `LEASE_LOST` where the row holds another.
 *
 * Acks are coalesced where the claimer has `settleMany`: while one settle statement runs, the
 * acks that become ready wait, then go together as one statement and one commit, each row
 * fenced by its own token (a row whose lease was taken over fails alone with `LEASE_LOST`). A
 * lone ack goes at once, as one `settle`: coalescing adds no wait to a quiet queue, and under
 * load turns N statements and commits into one.
 *
 * Where the claimer has `settleAndClaim`, an ack also travels with the next claim: a worker
 * that acked frees its slot at once, so the subscription's next claim starts within the same
 * turn of the event loop, and it takes the acks waiting then into its own transaction (one
 * commit for the ack and the claim instead of two). Acks no claim took by the end of the turn
 * (a full subscription, an empty queue) go on their own then (`setImmediate`): an ack waits at
 * most one turn longer than before. Should the combined call fail, nothing of it was committed:
 * the acks go on their own and the claim runs again alone, so each reports its own error.
 *
 * A claim may take back a row this subscription still holds, once its lease ran out while the
 * process stood still (its settlement queued, or its handler still running with extension off
 * or late): the hold in work keeps the row under the claim's new token (its queued settlement
 * and the extensions use it; a settlement sent with the old token just before is sent again
 * with the new one) and the row is not delivered a second time.
 *
 * @module
 */
import type { ClockSkewMonitor } from "./clock-skew.js";
import { EndOfTurn } from "./end-of-turn.js";
import { BrokerError, LeaseLostError } from "./errors.js";
import {
  type Claimed,
  type LeaseClaimer,
  type LeaseClaimRequest,
  MAX_COALESCED_SETTLEMENTS,
  type SettledAndClaimed,
} from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LazyAbort } from "./lazy-abort.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow, RowId } from "./rows.js";
import { type AckSettlement, isAckSettlement, type Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import { type LeaseToken, leaseExpiry } from "./tokens.js";
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
  /** Holds not finished yet (settling included), by row id: a claim that takes one back adopts it. */
  readonly #own = new Map<string, LeaseHold>();
  /** The claimer's claims (`claim`, `settleAndClaim`) in flight. */
  readonly #claims = new Set<Promise<unknown>>();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #clock: () => Date;
  readonly #skew: ClockSkewMonitor | undefined;
  #extending = false;
  /** Acks waiting for the settle statement in flight to finish, to go together. */
  readonly #pendingAcks: PendingAck[] = [];
  /** Whether a settle statement of coalesced acks (or a claim carrying acks) is in flight. */
  #flushing = false;
  /** Sends the acks no claim took by the end of the turn (`settleAndClaim` claimers). */
  readonly #leftAcks = new EndOfTurn(() => {
    if (!this.#flushing && this.#pendingAcks.length > 0) void this.#flushAcks();
  });

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
    this.#clock = options.clock ?? (() => new Date());
    this.#skew = options.skew;
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
    if (extend) {
      this.#timer = setInterval(() => void this.#extendAll(), (table.leaseSeconds * 1000) / 2);
    }
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    if (this.#skew !== undefined && !(await this.#skew.mayClaim())) return [];
    const now = this.#clock();
    const request = { limit, now, expiry: leaseExpiry(now, this.#table.leaseSeconds) };
    const claimed =
      this.#claimer.settleAndClaim !== undefined && this.#pendingAcks.length > 0 && !this.#flushing
        ? await this.#claimWithAcks(request)
        : await this.#inFlight(this.#claimer.claim(request));
    const holds: LeaseHold[] = [];
    for (const { row, token } of claimed) {
      const key = String(row.id);
      // Taken back from this subscription itself (see the module's notes): the hold in work keeps it.
      if (this.#own.get(key)?.adopt(token) === true) continue;
      const hold = new LeaseHold(this, row, token);
      if (!this.transactional) hold.transaction = undefined;
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
    const key = String(hold.row.id);
    if (this.#own.get(key) === hold) this.#own.delete(key);
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
    return this.#clock().getTime();
  }

  /** @internal */
  forget(hold: LeaseHold): void {
    this.#held.delete(hold);
  }

  /**
   * @internal settles one hold with its current token: an ack joins the acks ready with it (see
   * the module's notes), anything else goes on its own.
   */
  settleHold(hold: LeaseHold, settlement: Settlement): Promise<void> {
    if (this.#claimer.settleMany === undefined || !isAckSettlement(settlement)) {
      return this.#settleAlone(hold, settlement);
    }
    return new Promise<void>((resolve, reject) => {
      this.#pendingAcks.push({ hold, settlement, resolve, reject });
      if (this.#flushing) return;
      // The next claim, if one comes within this turn, takes the ack with it (see the module's notes).
      if (this.#claimer.settleAndClaim !== undefined) this.#leftAcks.set();
      else void this.#flushAcks();
    });
  }

  /** One settlement on its own; sent again should the hold have adopted a new token meanwhile. */
  async #settleAlone(hold: LeaseHold, settlement: Settlement): Promise<void> {
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

  /**
   * A claim that carries the acks waiting now (`settleAndClaim`): one transaction for both. On a
   * failure nothing was committed; the acks then go on their own (each failing with its own
   * error, if it does) and the claim runs alone.
   */
  async #claimWithAcks(request: LeaseClaimRequest): Promise<readonly Claimed<LeaseToken>[]> {
    const acks = this.#nextAcks();
    const settleAndClaim = this.#claimer.settleAndClaim as NonNullable<LeaseClaimer["settleAndClaim"]>;
    // Every ack of a table is the same kind; a markProcessed call writes the latest ack's time.
    const settlement = (acks[acks.length - 1] as PendingAck).settlement;
    this.#flushing = true;
    try {
      let result: SettledAndClaimed<LeaseToken>;
      const sent = acks.map(({ hold }) => hold.token);
      try {
        result = await this.#inFlight(
          settleAndClaim.call(
            this.#claimer,
            acks.map(({ hold }, index) => ({ id: hold.row.id, token: sent[index] as LeaseToken })),
            settlement,
            request,
          ),
        );
      } catch {
        await this.#settleAcks(acks);
        return await this.#inFlight(this.#claimer.claim(request));
      }
      // Not awaited: the claim's own rows are handed out first (an ack may wait for that).
      void this.#answer(acks, result.settled, sent);
      return result.claimed;
    } finally {
      this.#flushing = false;
      if (this.#pendingAcks.length > 0) this.#leftAcks.set();
    }
  }

  /** Sends the waiting acks, as many calls as it takes, until none waits. */
  async #flushAcks(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pendingAcks.length > 0) {
        await this.#settleAcks(this.#nextAcks());
      }
    } finally {
      this.#flushing = false;
    }
  }

  /**
   * Takes the next group of waiting acks, in order: at most {@link MAX_COALESCED_SETTLEMENTS},
   * and never one row twice. A row can wait twice when it was taken over and claimed again by
   * this subscription while its stale ack waited: the two acks hold different tokens and must be
   * fenced one after the other, or a driver matching results by id would report both settled.
   */
  #nextAcks(): PendingAck[] {
    const group: PendingAck[] = [];
    const ids = new Set<RowId>();
    const later: PendingAck[] = [];
    for (const ack of this.#pendingAcks) {
      const id = ack.hold.row.id;
      if (group.length >= MAX_COALESCED_SETTLEMENTS || ids.has(id)) later.push(ack);
      else {
        ids.add(id);
        group.push(ack);
      }
    }
    this.#pendingAcks.length = 0;
    this.#pendingAcks.push(...later);
    return group;
  }

  /**
   * Settles a group of acks: one `settle` for one, one `settleMany` for more; never throws. A
   * `settleMany` that fails changed no row: each ack then goes on its own, so that a row the
   * database refuses fails alone and the others settle.
   */
  async #settleAcks(acks: readonly PendingAck[]): Promise<void> {
    const [first] = acks;
    if (first === undefined) return;
    if (acks.length === 1) {
      try {
        await this.#settleAlone(first.hold, first.settlement);
        first.resolve();
      } catch (error) {
        first.reject(error);
      }
      return;
    }
    // Every ack of a table is the same kind; a markProcessed call writes the latest ack's time.
    const settlement = (acks[acks.length - 1] as PendingAck).settlement;
    const settleMany = this.#claimer.settleMany as NonNullable<LeaseClaimer["settleMany"]>;
    let settled: readonly boolean[];
    const sent = acks.map(({ hold }) => hold.token);
    try {
      settled = await settleMany.call(
        this.#claimer,
        acks.map(({ hold }, index) => ({ id: hold.row.id, token: sent[index] as LeaseToken })),
        settlement,
      );
    } catch {
      await Promise.all(acks.map((ack) => this.#settleAcks([ack])));
      return;
    }
    await this.#answer(acks, settled, sent);
  }

  /**
   * Resolves each ack the database settled; fails the others with `LEASE_LOST`, but for a hold
   * that adopted a new token since its ack was `sent`: that ack waits to go again.
   */
  async #answer(
    acks: readonly PendingAck[],
    settled: readonly boolean[],
    sent: readonly LeaseToken[],
  ): Promise<void> {
    if (settled.some((one) => one !== true)) await this.#claimsReturned();
    let again = false;
    acks.forEach((ack, index) => {
      if (settled[index] === true) ack.resolve();
      else if (ack.hold.token !== sent[index]) {
        this.#pendingAcks.push(ack);
        again = true;
      } else ack.reject(this.lost(ack.hold));
    });
    if (again && !this.#flushing) void this.#flushAcks();
  }

  /** @internal the claimer's transaction method, where it has one. */
  get transactional(): boolean {
    return this.#claimer.transaction !== undefined;
  }

  /** @internal runs a transactional handler's work and the fenced settlement of one hold in one transaction. */
  transactionHold(hold: LeaseHold, work: TransactionWork, fence: () => Promise<LeaseToken>): Promise<void> {
    return (this.#claimer.transaction as NonNullable<LeaseClaimer["transaction"]>).call(
      this.#claimer,
      hold.row.id,
      work,
      fence,
      hold.signal,
    );
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
      holds.map((hold, index) => ({ id: hold.row.id, token: sent[index] as LeaseToken })),
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

/** An ack waiting to be sent with others. */
interface PendingAck {
  readonly hold: LeaseHold;
  readonly settlement: AckSettlement;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
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

  constructor(runtime: LeaseRuntime, row: ClaimedRow, token: LeaseToken) {
    this.#runtime = runtime;
    this.row = row;
    this.token = token;
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

  async settle(settlement: Settlement): Promise<void> {
    this.settling = true;
    try {
      if (this.extension !== undefined) await this.extension;
      this.#runtime.forget(this);
      if (this.lostError !== undefined) throw this.lostError;
      await this.#runtime.settleHold(this, settlement);
    } catch (error) {
      if (BrokerError.is(error, "LEASE_LOST")) {
        this.controller.abort(error);
      }
      throw error;
    } finally {
      this.#runtime.finished(this);
    }
  }

  /**
   * Runs a transactional handler's work in one transaction with the settlement, fenced by the
   * token the hold has when the work is done: extensions go on while the body runs, then stop.
   */
  transaction: ((work: TransactionWork) => Promise<void>) | undefined = async (work) => {
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
  };

  async giveBack(reason: BrokerError): Promise<void> {
    this.settling = true;
    if (this.extension !== undefined) await this.extension;
    this.#runtime.forget(this);
    this.#runtime.finished(this);
    this.controller.abort(reason);
    if (this.lostError !== undefined) return;
    try {
      await this.#runtime.settleHold(this, { kind: "release", runAt: null });
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
