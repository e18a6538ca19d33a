/**
 * The connections a driver's open subscriptions need from its one pool, counted once for every
 * driver: each subscription's need is checked against the pool's size when it opens
 * ({@link checkPoolSize}), added to the driver's total, and taken off again when its claimer
 * closes.
 *
 * @module
 */
import type { OpenOptions } from "./driver.js";
import { checkPoolSize } from "./options-check.js";
import type { TableDefinition } from "./table.js";

/** The connections one driver's open subscriptions need together. */
export class ConnectionBudget {
  #inUse = 0;

  /** The connections the subscriptions open now need together. */
  get inUse(): number {
    return this.#inUse;
  }

  /**
   * Refuses a subscription that needs more connections than the pool holds (`poolSize`, when the
   * pool shows it; warns when the open subscriptions together need more), then opens its claimer
   * with `open` and counts its connections until the claimer closes. A claimer that fails to
   * open counts nothing.
   *
   * @throws {DeclarationError} the pool is smaller than this subscription needs.
   */
  async open<C extends { close(): Promise<void> }>(
    table: TableDefinition,
    poolSize: number | undefined,
    options: Pick<OpenOptions, "logger" | "workers">,
    open: () => Promise<C>,
  ): Promise<C> {
    const needed = checkPoolSize(table, poolSize, options.workers ?? 1, this.#inUse, options.logger);
    const claimer = await open();
    this.#inUse += needed;
    const close = claimer.close.bind(claimer);
    let counted = true;
    claimer.close = async () => {
      if (counted) this.#inUse -= needed;
      counted = false;
      await close();
    };
    return claimer;
  }
}
