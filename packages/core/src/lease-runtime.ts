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
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #clock: () => Date;
  readonly #skew: ClockSkewMonitor | undefined;
  #extending = false;
  /** Where acks wait to go together, or with the next claim; `undefined`: each goes alone at once. */
  readonly #acks: AckCarrier<PendingAck> | undefined;
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
    this.#clock = options.clock ?? (() => new Date());
    this.#skew = options.skew;
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
    this.#carrying = offers(claimer, "claimWithAcks") ? claimer : undefined;
    this.#transactional = offers(claimer, "transaction") ? claimer : undefined;
    this.#acks =
      this.#carrying === undefined && claimer.settleMany === undefined
        ? undefined
        : new AckCarrier<PendingAck>({
            carried: this.#carrying !== undefined,
            oneAtATime: true,
            take: nextAcks,
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
    const alone = (): Promise<readonly Claimed<LeaseToken>[]> => this.#claimer.claim(request);
    const claimed =
      this.#acks === undefined
        ? await alone()
        : await this.#acks.claim((acks) => this.#claimWithAcks(acks, request), alone);
    return claimed.map(({ row, token }) => {
      const hold = new LeaseHold(this, row, token);
      if (!this.transactional) hold.transaction = undefined;
      this.#held.add(hold);
      return hold;
    });
  }

  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    for (const hold of this.#held) hold.controller.abort();
    this.#held.clear();
    await this.#claimer.close();
  }

  /** @internal */
  forget(hold: LeaseHold): void {
    this.#held.delete(hold);
  }

  /**
   * @internal settles one hold with its current token: an ack goes by the carrier (see the
   * module's notes), anything else on its own.
   */
  settleHold(hold: LeaseHold, settlement: Settlement): Promise<void> {
    const acks = this.#acks;
    if (acks === undefined || !isAckSettlement(settlement)) {
      return this.#claimer.settle(hold.row.id, hold.token, settlement);
    }
    return new Promise<void>((resolve, reject) => {
      acks.add({ hold, settlement, resolve, reject });
    });
  }

  /** A claim that carries `acks` (`claimWithAcks`): one transaction for both (a failure: see `AckCarrier.claim`). */
  async #claimWithAcks(
    acks: NonEmpty<PendingAck>,
    request: LeaseClaimRequest,
  ): Promise<readonly Claimed<LeaseToken>[]> {
    const claimer = this.#carrying;
    if (claimer === undefined) return this.#claimer.claim(request);
    const result = await claimer.claimWithAcks(heldOf(acks), request);
    this.#answer(acks, result.settled);
    return result.claimed;
  }

  /** Settles a group of acks alone: one `settleMany` for more than one where the claimer has it, else one `settle` each; never throws. */
  async #settleAcks(acks: NonEmpty<PendingAck>): Promise<void> {
    const claimer = this.#claimer;
    if (acks.length === 1 || !offers(claimer, "settleMany")) {
      await Promise.all(
        acks.map(({ hold, settlement, resolve, reject }) =>
          claimer.settle(hold.row.id, hold.token, settlement).then(resolve, reject),
        ),
      );
      return;
    }
    let settled: readonly boolean[];
    try {
      settled = await claimer.settleMany(heldOf(acks));
    } catch (error) {
      for (const ack of acks) ack.reject(error);
      return;
    }
    this.#answer(acks, settled);
  }

  /** Resolves each ack the database settled; fails the others with `LEASE_LOST`. */
  #answer(acks: readonly PendingAck[], settled: readonly boolean[]): void {
    acks.forEach((ack, index) => {
      if (settled[index] === true) ack.resolve();
      else ack.reject(this.lost(ack.hold));
    });
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
    const running = this.#claimer.extend(
      holds.map((hold) => ({ id: hold.row.id, token: hold.token })),
      expiry,
    );
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    for (const hold of holds) hold.extension = settled;
    try {
      const tokens = await running;
      holds.forEach((hold, index) => {
        const token = tokens[index];
        if (token === null || token === undefined) {
          const error = this.lost(hold);
          hold.lostError = error;
          this.#held.delete(hold);
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
 */
function nextAcks(waiting: PendingAck[]): PendingAck[] {
  const group: PendingAck[] = [];
  const ids = new Set<RowId>();
  const later: PendingAck[] = [];
  for (const ack of waiting) {
    const id = ack.hold.row.id;
    if (group.length >= MAX_COALESCED_SETTLEMENTS || ids.has(id)) later.push(ack);
    else {
      ids.add(id);
      group.push(ack);
    }
  }
  waiting.length = 0;
  waiting.push(...later);
  return group;
}

/** The acks of `acks` as the claimer takes them: each row with its token (one settlement for all, the latest ack's). */
function heldOf(acks: NonEmpty<PendingAck>): Acks<HeldLease> {
  return {
    rows: acks.map(({ hold }) => ({ id: hold.row.id, token: hold.token })),
    settlement: lastOf(acks).settlement,
  };
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

  async settle(settlement: Settlement): Promise<void> {
    this.settling = true;
    if (this.extension !== undefined) await this.extension;
    this.#runtime.forget(this);
    if (this.lostError !== undefined) throw this.lostError;
    try {
      await this.#runtime.settleHold(this, settlement);
    } catch (error) {
      if (BrokerError.is(error, "LEASE_LOST")) {
        this.controller.abort(error);
      }
      throw error;
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
    } catch (error) {
      if (BrokerError.is(error, "LEASE_LOST")) {
        this.#runtime.forget(this);
        this.controller.abort(error);
      }
      throw error;
    }
  };

  async giveBack(reason: BrokerError): Promise<void> {
    this.settling = true;
    if (this.extension !== undefined) await this.extension;
    this.#runtime.forget(this);
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
    this.abandoned = reason;
    this.controller.abort(reason);
  }
}
