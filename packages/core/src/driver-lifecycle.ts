/**
 * The closed guard, the open sequence and the close sequence of a driver, the same on every
 * database: after `close()` the driver refuses `open`, `publish` and `publishUnique` with a
 * `ClosedError` (code `CLOSED`); a subscription's claimer opens against the pool's size (the
 * driver's {@link ConnectionBudget}) with its failures normalized by the driver; and `close()`
 * ends what the driver opened once, however often it is called.
 *
 * @module
 */
import { ConnectionBudget } from "./connection-budget.js";
import type { OpenOptions } from "./driver.js";
import { ClosedError } from "./errors.js";
import type { TableDefinition } from "./table.js";

/**
 * One driver's open or closed state.
 *
 * @example
 * readonly #lifecycle = new DriverLifecycle("MySQL");
 * open(table, options) {
 *   return this.#lifecycle.open(table, options, poolSize(this.pool), () => this.#openChecked(table, options), normalize);
 * }
 * publish(table, rows) { this.#lifecycle.assertOpen(table); … }
 * close() { return this.#lifecycle.close(() => this.pool.end()); }
 */
export class DriverLifecycle {
  readonly #label: string;
  /** The connections the driver's open subscriptions need together. */
  readonly #budget = new ConnectionBudget();
  #closing: Promise<void> | undefined;

  /** @param label the database as messages name it (`"PostgreSQL"`, `"MySQL"`, `"SQLite"`). */
  constructor(label: string) {
    this.#label = label;
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Refuses work for `table` once the driver is closed.
   *
   * @throws {ClosedError} `close()` was called.
   */
  assertOpen(table: TableDefinition): void {
    if (this.#closing === undefined) return;
    throw new ClosedError(
      `The ${this.#label} driver is closed; table "${table.name}" cannot be used through it. Create a new driver.`,
      { table: table.name },
    );
  }

  /**
   * Opens a subscription's claimer: refuses after `close()`, refuses a pool smaller than the
   * subscription needs (`poolSize`, when the pool shows it; see {@link ConnectionBudget}), then runs
   * `open` and counts the claimer's connections until it closes. A failure of `open` is passed
   * through `normalize` (the driver's `normalizeError`) when given.
   *
   * @throws {ClosedError} `close()` was called.
   * @throws {DeclarationError} the pool is smaller than this subscription needs.
   */
  async open<C extends { close(): Promise<void> }>(
    table: TableDefinition,
    options: Pick<OpenOptions, "logger" | "workers">,
    poolSize: number | undefined,
    open: () => Promise<C>,
    normalize?: (error: unknown) => unknown,
  ): Promise<C> {
    this.assertOpen(table);
    return this.#budget.open(table, poolSize, options, () =>
      normalize === undefined
        ? open()
        : open().catch((error: unknown) => {
            throw normalize(error);
          }),
    );
  }

  /**
   * Closes the driver: runs `end` (what ends the driver's own resources) the first time, and
   * returns the same promise to every later call.
   */
  close(end: () => Promise<void> | void): Promise<void> {
    this.#closing ??= (async () => {
      await end();
    })();
    return this.#closing;
  }
}
