/**
 * The `LEASE_LOST` a settlement raises when it changed nothing, worded once for every driver:
 * in the lease form the row no longer holds the delivery's token; in the advisory lock form the
 * row was found gone or finished while its key was held.
 *
 * @module
 */
import { LeaseLostError } from "./errors.js";
import type { RowId } from "./rows.js";

/**
 * The error of a lease settlement that matched no row: row `id` of table `table` no longer holds
 * the lease whose expiry is `expiry`. `kind` is the settlement's kind (`delete`, `release`, …).
 */
export function leaseLostOnSettle(table: string, id: RowId, expiry: Date, kind: string): LeaseLostError {
  return new LeaseLostError(
    `Table "${table}" (lease form): row ${String(id)} no longer holds this delivery's lease (expiry ${expiry.toISOString()}), so its ${kind} settlement changed nothing. The lease ran out and another claim took the row, or the row is gone. Make the lease longer than a handler can stall, or keep lease extension on.`,
    { table },
  );
}

/**
 * The error of an advisory settlement that matched no row: row `id` of table `table` was gone or
 * finished (deleted or settled by hand) while the delivery held `key` (the lock key, or the
 * driver's name for it).
 */
export function advisoryRowGone(table: string, id: RowId, key: string, kind: string): LeaseLostError {
  return new LeaseLostError(
    `Table "${table}" (advisory lock form): the ${kind} settlement of row ${String(id)} found the row gone or finished while its key "${key}" was held (deleted or settled by hand?); it changed nothing.`,
    { table },
  );
}
