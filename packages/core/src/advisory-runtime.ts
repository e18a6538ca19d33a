/**
 * The advisory lock form in the broker: each row is held by its key's lock on a connection of
 * its own; settlement runs on that connection and unlocks; giving up unlocks without settling.
 *
 * Where the claimer has `claimWithAcks` (a database whose locks live in the process, such as
 * SQLite), an ack goes by the {@link AckCarrier}: it waits for the next claim within the turn in
 * which it became ready and travels with it (one transaction and one commit for the acks and the
 * claim); acks no claim took by the end of the turn go alone then, each with `settle`. Should a
 * carrying claim fail, nothing of it was committed and every ack's key is still held: the acks go
 * alone and the claim runs again, so each reports its own error.
 *
 * @module
 */
import { AckCarrier, lastOf, type NonEmpty } from "./ack-carrier.js";
import { type BrokerError, LeaseLostError } from "./errors.js";
import {
  type AdvisoryClaimer,
  type Claimed,
  type ClaimRequest,
  MAX_COALESCED_SETTLEMENTS,
  type Offering,
  offers,
} from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LazyAbort } from "./lazy-abort.js";
import type { ClaimedRow } from "./rows.js";
import { type AckSettlement, isAckSettlement, type Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import type { AdvisoryToken } from "./tokens.js";
import type { TransactionWork } from "./transactional.js";

/** An ack waiting for the next claim. */
interface PendingAck {
  readonly token: AdvisoryToken;
  readonly row: ClaimedRow;
  readonly settlement: AckSettlement;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** The broker's runtime for advisory lock tables. */
export class AdvisoryRuntime implements FormRuntime {
  readonly #claimer: AdvisoryClaimer;
  readonly #table: TableDefinition;
  /** The claimer where it carries acks with a claim. */
  readonly #carrying: Offering<AdvisoryClaimer, "claimWithAcks"> | undefined;
  /** The claimer where it runs transactional handlers. */
  readonly #transactional: Offering<AdvisoryClaimer, "transaction"> | undefined;
  /** Acks waiting for the next claim (`claimWithAcks` claimers only). */
  readonly #acks: AckCarrier<PendingAck>;
  /** The host's clock (the broker's `clock`): each claim's `now`. */
  readonly #clock: () => Date;

  /** @param clock the host's clock (the broker's `clock`; default `() => new Date()`). */
  constructor(claimer: AdvisoryClaimer, table: TableDefinition, clock?: () => Date) {
    this.#clock = clock ?? (() => new Date());
    this.#claimer = claimer;
    this.#table = table;
    this.#carrying = offers(claimer, "claimWithAcks") ? claimer : undefined;
    this.#transactional = offers(claimer, "transaction") ? claimer : undefined;
    this.#acks = new AckCarrier<PendingAck>({
      carried: this.#carrying !== undefined,
      oneAtATime: true,
      take: (waiting) => waiting.splice(0, MAX_COALESCED_SETTLEMENTS),
      alone: async (acks) => {
        await Promise.all(this.#settleAlone(acks));
      },
    });
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const request = { limit, now: this.#clock() };
    const claimed = await this.#acks.claim(
      (acks) => this.#claimWithAcks(acks, request),
      () => this.#claimer.claim(request),
    );
    return claimed.map(({ row, token }) => this.#hold(row, token));
  }

  close(): Promise<void> {
    return this.#claimer.close();
  }

  /** A claim carrying `acks` (see the module's notes; a failure: see `AckCarrier.claim`). */
  async #claimWithAcks(
    acks: NonEmpty<PendingAck>,
    request: ClaimRequest,
  ): Promise<readonly Claimed<AdvisoryToken>[]> {
    const claimer = this.#carrying;
    if (claimer === undefined) return this.#claimer.claim(request);
    const result = await claimer.claimWithAcks(
      { rows: acks.map(({ token, row }) => ({ token, row })), settlement: lastOf(acks).settlement },
      request,
    );
    acks.forEach((ack, index) => {
      if (result.settled[index] === true) ack.resolve();
      else ack.reject(this.#gone(ack));
    });
    return result.claimed;
  }

  /** Settles each ack with `settle`, on its own; the promises never reject. */
  #settleAlone(acks: readonly PendingAck[]): Promise<void>[] {
    return acks.map((ack) =>
      this.#claimer.settle(ack.token, ack.row, ack.settlement).then(ack.resolve, ack.reject),
    );
  }

  /** Settles a row: an ack waits for the next claim where the claimer can carry it. */
  #settle(token: AdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    if (!this.#acks.carried || !isAckSettlement(settlement)) {
      return this.#claimer.settle(token, row, settlement);
    }
    return new Promise<void>((resolve, reject) => {
      this.#acks.add({ token, row, settlement, resolve, reject });
    });
  }

  /** The error of an ack whose row was gone or finished: nothing changed. */
  #gone(ack: PendingAck): LeaseLostError {
    return new LeaseLostError(
      `Table "${this.#table.name}" (advisory lock form): the ${ack.settlement.kind} settlement of row ${String(ack.row.id)} found the row gone or finished while its key was held (deleted or settled by hand?); it changed nothing.`,
      { table: this.#table.name },
    );
  }

  #hold(row: HeldRow["row"], token: AdvisoryToken): HeldRow {
    const controller = new LazyAbort();
    const transactional = this.#transactional;
    return {
      row,
      get signal() {
        return controller.signal;
      },
      get aborted() {
        return controller.aborted;
      },
      leaseExpiry: undefined,
      settle: (settlement) => this.#settle(token, row, settlement),
      ...(transactional === undefined
        ? {}
        : { transaction: (work: TransactionWork) => transactional.transaction(token, row, work) }),
      abandon: async (reason: BrokerError) => {
        controller.abort(reason);
        await this.#claimer.release(token);
      },
      giveBack: async (reason: BrokerError) => {
        controller.abort(reason);
        await this.#claimer.release(token);
      },
    };
  }
}
