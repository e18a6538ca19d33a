/**
 * The check every driver's `publishUnique` makes of its options: a unique publish runs in
 * transactions of its own (it retries the races of concurrent publishers), so a caller's
 * `client` is refused the same way on every database.
 *
 * @module
 */
import type { DriverPublishOptions } from "./driver.js";
import { InvalidArgumentError } from "./errors.js";
import type { TableDefinition } from "./table.js";

/**
 * Refuses a unique publish given a caller's `client`.
 *
 * @throws {InvalidArgumentError} `options.client` is set.
 */
export function refuseUniquePublishClient(table: TableDefinition, options: DriverPublishOptions): void {
  if (options.client === undefined) return;
  throw new InvalidArgumentError(`publish(${table.name}): a unique publish takes no client.`, {
    table: table.name,
  });
}
