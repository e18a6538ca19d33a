/**
 * The advisory lock form in the broker: each row is held by its key's lock on a connection of
 * its own; settlement runs on that connection and unlocks; giving up unlocks without settling.
 *
 * @module
 */
import type { BrokerError } from "./errors.js";
import type { AdvisoryClaimer } from "./forms.js";
import type { FormRuntime, HeldRow } from "./held-row.js";
import { LazyAbort } from "./lazy-abort.js";
import type { AdvisoryToken } from "./tokens.js";
import type { TransactionWork } from "./transactional.js";

/** The broker's runtime for advisory lock tables. */
export class AdvisoryRuntime implements FormRuntime {
  readonly #claimer: AdvisoryClaimer;

  constructor(claimer: AdvisoryClaimer) {
    this.#claimer = claimer;
  }

  async claim(limit: number): Promise<readonly HeldRow[]> {
    const claimed = await this.#claimer.claim({ limit, now: new Date() });
    return claimed.map(({ row, token }) => this.#hold(row, token));
  }

  close(): Promise<void> {
    return this.#claimer.close();
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
      settle: (settlement) => this.#claimer.settle(token, row, settlement),
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
