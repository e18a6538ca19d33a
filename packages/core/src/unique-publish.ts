/**
 * The broker's side of a unique publish: refuses what the driver or the call cannot do, and
 * hands the rows with their keys to {@link Driver.publishUnique}.
 *
 * @module
 */
import type { Driver } from "./driver.js";
import { InvalidArgumentError } from "./errors.js";
import type { PublishRow } from "./rows.js";
import type { TableDefinition } from "./table.js";
import type { PublishResult, UniqueConflict, UniquePublishRow } from "./unique.js";

/**
 * Refuses a unique publish the driver cannot run, before anything is written.
 *
 * @throws {InvalidArgumentError} the driver has no `publishUnique`, or a caller's `client` is
 * given (a unique publish retries its races in transactions of its own).
 * @internal used by the broker.
 */
export function assertUniquePublish(
  driver: Driver,
  table: TableDefinition,
  target: { readonly client?: unknown },
): void {
  if (driver.publishUnique === undefined) {
    throw new InvalidArgumentError(
      `publish(${table.name}): driver "${driver.name}" does not offer unique keys; publish without a key.`,
      { table: table.name },
    );
  }
  if (target.client !== undefined) {
    throw new InvalidArgumentError(
      `publish(${table.name}): a publish with a key runs in transactions of its own (it retries the races of concurrent publishers); leave out { client }.`,
      { table: table.name },
    );
  }
}

/**
 * Publishes encoded rows with their keys through the driver and returns what happened to each.
 *
 * @internal used by the broker after {@link assertUniquePublish}.
 */
export async function publishUniqueRows(
  driver: Driver,
  table: TableDefinition,
  rows: readonly PublishRow[],
  unique: readonly { readonly key: string | null; readonly onConflict: UniqueConflict }[],
  _target: { readonly client?: unknown },
): Promise<readonly PublishResult[]> {
  const keyed: UniquePublishRow[] = rows.map((row, index) => {
    const entry = unique[index] ?? { key: null, onConflict: "keep" as const };
    return { ...row, key: entry.key, onConflict: entry.onConflict };
  });
  const publishUnique = driver.publishUnique;
  if (publishUnique === undefined) throw new Error("unreachable: assertUniquePublish checks publishUnique");
  return await publishUnique.call(driver, table, keyed, {});
}
