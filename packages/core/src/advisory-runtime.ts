/**
 * The advisory lock form in the broker: each row is held by its key's lock on a connection of
 * its own; settlement runs on that connection and unlocks; giving up unlocks without settling.
 *
 * Where the claimer has `settleAndClaim` (a database whose locks live in the process, such as
 * SQLite), an ack waits for the next claim within the turn of the event loop in which it became
 * ready, and travels with it: one transaction and one commit for the acks and the claim. Acks no
 * claim took by the end of the turn go on their own then, each with `settle`. Should the
 * combined call fail, nothing of it was committed and every ack's key is still held: the acks
 * go on their own and the claim runs again alone, so each reports its own error.
 *
 * @module
 */
import { EndOfTurn } from "./end-of-turn.js";
import { type BrokerError, LeaseLostError } from "./errors.js";
import { type AdvisoryClaimer, type Claimed, type ClaimRequest, MAX_COALESCED_SETTLEMENTS } from "./forms.js";
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
  /** Acks waiting for the next claim (`settleAndClaim` claimers only). */
  readonly #pendingAcks: PendingAck[] = [];
  /** Whether a claim carrying acks is in flight: acks ready meanwhile wait for the next one. */
  #carrying = false;
  readonly #leftAcks = new EndOfTurn(() => {
    if (!this.#carrying) this.#settleAlone(this.#pendingAcks.splice(0));
  });

  constructor(claimer: AdvisoryClaimer, table: TableDefinition) {
    this.#claimer = claimer;
    this.#table = table;
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const request = { limit, now: new Date() };
    const claimed =
      this.#claimer.settleAndClaim !== undefined && this.#pendingAcks.length > 0 && !this.#carrying
        ? await this.#claimWithAcks(request)
        : await this.#claimer.claim(request);
    return claimed.map(({ row, token }) => this.#hold(row, token));
  }

  close(): Promise<void> {
    return this.#claimer.close();
  }

  /** A claim carrying the acks waiting now (see the module's notes). */
  async #claimWithAcks(request: ClaimRequest): Promise<readonly Claimed<AdvisoryToken>[]> {
    const acks = this.#pendingAcks.splice(0, MAX_COALESCED_SETTLEMENTS);
    const settleAndClaim = this.#claimer.settleAndClaim as NonNullable<AdvisoryClaimer["settleAndClaim"]>;
    // Every ack of a table is the same kind; a markProcessed call writes the latest ack's time.
    const settlement = (acks[acks.length - 1] as PendingAck).settlement;
    this.#carrying = true;
    try {
      let result: Awaited<ReturnType<typeof settleAndClaim>>;
      try {
        result = await settleAndClaim.call(
          this.#claimer,
          acks.map(({ token, row }) => ({ token, row })),
          settlement,
          request,
        );
      } catch {
        await Promise.all(this.#settleAlone(acks));
        return await this.#claimer.claim(request);
      }
      acks.forEach((ack, index) => {
        if (result.settled[index] === true) ack.resolve();
        else ack.reject(this.#gone(ack));
      });
      return result.claimed;
    } finally {
      this.#carrying = false;
      if (this.#pendingAcks.length > 0) this.#leftAcks.set();
    }
  }

  /** Settles each ack with `settle`, on its own; the promises never reject. */
  #settleAlone(acks: readonly PendingAck[]): Promise<void>[] {
    return acks.map((ack) =>
      this.#claimer.settle(ack.token, ack.row, ack.settlement).then(ack.resolve, ack.reject),
    );
  }

  /** Settles a row: an ack waits for the next claim where the claimer can carry it. */
  #settle(token: AdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    if (this.#claimer.settleAndClaim === undefined || !isAckSettlement(settlement)) {
      return this.#claimer.settle(token, row, settlement);
    }
    return new Promise<void>((resolve, reject) => {
      this.#pendingAcks.push({ token, row, settlement, resolve, reject });
      this.#leftAcks.set();
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
      ...(this.#claimer.transaction === undefined
        ? {}
        : {
            transaction: (work: TransactionWork) =>
              (this.#claimer.transaction as NonNullable<AdvisoryClaimer["transaction"]>).call(
                this.#claimer,
                token,
                row,
                work,
              ),
          }),
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
