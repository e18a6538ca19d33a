/**
 * The lease form in the broker: claims write an expiry and commit at once; a keeper extends
 * every lease in work each half lease; a settlement names the token it holds now and fails with
 * `LEASE_LOST` where the row holds another.
 *
 * @module
 */
import type { ClockSkewMonitor } from "./clock-skew.js";
import { BrokerError, LeaseLostError } from "./errors.js";
import type { LeaseClaimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow } from "./rows.js";
import type { Settlement } from "./settlement.js";
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
    const claimed = await this.#claimer.claim({
      limit,
      now,
      expiry: leaseExpiry(now, this.#table.leaseSeconds),
    });
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

  /** @internal settles one hold with its current token. */
  settleHold(hold: LeaseHold, settlement: Settlement): Promise<void> {
    return this.#claimer.settle(hold.row.id, hold.token, settlement);
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

class LeaseHold implements HeldRow {
  readonly controller = new AbortController();
  readonly signal: AbortSignal = this.controller.signal;
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

  async abandon(reason: BrokerError): Promise<void> {
    this.#runtime.forget(this);
    this.abandoned = reason;
    this.controller.abort(reason);
  }
}
