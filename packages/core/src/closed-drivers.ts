/**
 * The guard against using a driver after a broker closed it, kept in core so that every driver
 * refuses the same way (a `ClosedError`, code `CLOSED`), whatever guards the driver has itself.
 *
 * @module
 */
import type { Driver } from "./driver.js";
import { ClosedError } from "./errors.js";
import type { TableDefinition } from "./table.js";

/** The drivers a broker's `close()` closed (a driver is closed once, for every broker on it). */
const closedDrivers = new WeakSet<Driver>();

/** Records that `driver` is being closed: every broker on it refuses new work from now on. */
export function markDriverClosed(driver: Driver): void {
  closedDrivers.add(driver);
}

/**
 * Refuses work for `table` on a driver a broker closed.
 *
 * @throws {ClosedError} `driver` was closed by a broker's `close()`.
 */
export function assertDriverOpen(driver: Driver, table: TableDefinition): void {
  if (!closedDrivers.has(driver)) return;
  throw new ClosedError(
    `The ${driver.name} driver was closed (by a broker's close()); table "${table.name}" cannot be used through it. Create a new driver.`,
    { table: table.name },
  );
}
