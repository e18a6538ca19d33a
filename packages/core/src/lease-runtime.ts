/**
 * The lease form in the broker: claims write an expiry and commit at once; a keeper extends
 * every lease in work each half lease; a settlement names the token it holds now and fails with
 * `LEASE_LOST` where the row holds another.
 *
 * @module
 */
import { BrokerError, LeaseLostError } from "./errors.js";
import type { LeaseClaimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import type { Logger } from "./logger.js";
import type { ClaimedRow } from "./rows.js";
import type { Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import { type LeaseToken, leaseExpiry } from "./tokens.js";

/** The broker's runtime for lease tables. */
export class LeaseRuntime implements FormRuntime {
  readonly #claimer: LeaseClaimer;
  readonly #table: TableDefinition;
  readonly #logger: Logger;
  readonly #held = new Set<LeaseHold>();
  readonly #timer: NodeJS.Timeout | undefined;
  #extending = false;

  /**
   * @param extend whether to extend leases in work each half lease (a subscription may turn it
   * off so that a handler never outlives its lease).
   */
  constructor(claimer: LeaseClaimer, table: TableDefinition, logger: Logger, extend: boolean) {
    this.#claimer = claimer;
    this.#table = table;
    this.#logger = logger;
    if (extend) {
      this.#timer = setInterval(() => void this.#extendAll(), (table.leaseSeconds * 1000) / 2);
    }
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const now = new Date();
    const claimed = await this.#claimer.claim({
      limit,
      now,
      expiry: leaseExpiry(now, this.#table.leaseSeconds),
    });
    return claimed.map(({ row, token }) => {
      const hold = new LeaseHold(this, row, token);
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
    const expiry = leaseExpiry(new Date(), this.#table.leaseSeconds);
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
          error,
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

  async abandon(reason: BrokerError): Promise<void> {
    this.#runtime.forget(this);
    this.controller.abort(reason);
  }
}
