/**
 * Settlements: the change a driver makes to a claimed row once its outcome is known. The broker
 * turns each {@link Outcome} into one settlement with the table's columns in mind, so drivers
 * only translate settlements into SQL.
 *
 * @module
 */

/** Delete the row (ack or drop on a table without `processedAt`). */
export interface DeleteSettlement {
  readonly kind: "delete";
}

/** Set `processedAt` to `at` (ack or drop on a table with `processedAt`). */
export interface MarkProcessedSettlement {
  readonly kind: "markProcessed";
  readonly at: Date;
}

/**
 * Give the row back to the queue. `runAt` is the new due time, or `null` to leave the column as
 * it is (a plain retry keeps its place in claim order). The lease form also clears `lockedUntil`.
 */
export interface ReleaseSettlement {
  readonly kind: "release";
  readonly runAt: Date | null;
}

/** Move the row to another group of the same table, due at once and unlocked. */
export interface MoveToGroupSettlement {
  readonly kind: "moveToGroup";
  readonly group: string;
}

/**
 * Move the row to another table with the same columns: insert a copy (unlocked, due at once)
 * and delete the original, in one transaction.
 */
export interface MoveToTableSettlement {
  readonly kind: "moveToTable";
  readonly table: string;
}

/**
 * Every settlement a driver applies. In the row lock form every settlement that keeps the row
 * (`markProcessed`, `release`, `moveToGroup`, `moveToTable`) also counts the attempt
 * (`attempt + 1`), because that form counts attempts at settlement.
 */
export type Settlement =
  | DeleteSettlement
  | MarkProcessedSettlement
  | ReleaseSettlement
  | MoveToGroupSettlement
  | MoveToTableSettlement;

/**
 * The settlements an ack (or drop) becomes: on a given table always the same kind, `delete`
 * without a `processedAt` column, `markProcessed` with one. These are the settlements the broker
 * coalesces (`Acks`: a row lock batch's end, a lease `settleMany`, a claim that carries acks): a retry or a dead letter is rare
 * and goes on its own.
 */
export type AckSettlement = DeleteSettlement | MarkProcessedSettlement;

/** Whether a settlement is an {@link AckSettlement}, which the broker may coalesce with others. */
export function isAckSettlement(settlement: Settlement): settlement is AckSettlement {
  return settlement.kind === "delete" || settlement.kind === "markProcessed";
}
