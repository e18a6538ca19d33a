/**
 * The closed guard and close sequence of a driver, the same on every database: after `close()`
 * the driver refuses `open`, `publish` and `publishUnique` with a `ClosedError` (code `CLOSED`),
 * and `close()` ends what the driver opened once, however often it is called.
 *
 * @module
 */
import { ClosedError } from "./errors.js";
import type { TableDefinition } from "./table.js";

/**
 * One driver's open or closed state.
 *
 * @example
 * readonly #lifecycle = new DriverLifecycle("MySQL");
 * publish(table, rows) { this.#lifecycle.assertOpen(table); … }
 * close() { return this.#lifecycle.close(() => this.pool.end()); }
 */
export class DriverLifecycle {
  readonly #label: string;
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
