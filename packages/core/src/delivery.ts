/**
 * What a handler receives.
 *
 * @module
 */
import type { Outcome } from "./outcomes.js";
import type { Headers, RowId } from "./rows.js";
import type { ClaimFormName, TableDefinition } from "./table.js";

/** One claimed row handed to a handler. */
export interface Delivery<P = unknown> {
  /** The row's primary key. */
  readonly id: RowId;
  /** The decoded payload. */
  readonly payload: P;
  /** The attempt as it stood before this claim: the first delivery reads 1 in every form. */
  readonly attempt: number;
  /** The row's group, or `null`. */
  readonly group: string | null;
  /** The row's headers (`{}` where none). */
  readonly headers: Headers;
  /** Every described column as the database client read it. */
  readonly row: Readonly<Record<string, unknown>>;
  /** The table the row came from. */
  readonly table: TableDefinition;
  /** The claim form that holds the row. */
  readonly form: ClaimFormName;
  /**
   * Aborts when the delivery can no longer settle: its lease was lost (reason: a
   * `LeaseLostError`) or the broker closed past its timeout (reason: a `ClosedError`).
   */
  readonly signal: AbortSignal;
  /** The lease expiry this delivery holds now (lease form); `undefined` in the other forms. */
  readonly leaseExpiry: Date | undefined;
  /**
   * Settles the row now, instead of by the handler's return value. Resolves once the outcome is
   * in the database (for a row lock batch: once the batch committed).
   *
   * @throws {LeaseLostError} the lease was taken over; nothing changed.
   * @throws {ClosedError} the broker closed and gave the row up; nothing changed.
   * @throws {BatchRolledBackError} another settlement of the same row lock batch failed.
   * @throws {InvalidArgumentError} the delivery was already settled.
   */
  settle(outcome: Outcome): Promise<void>;
}

/** What a handler may return: an outcome, or nothing (ack). */
export type HandlerResult = Outcome | undefined;

/**
 * A subscription's handler. It returns the outcome to settle by; returning nothing acks (unless
 * it already called `delivery.settle`). A handler that throws is retried with capped
 * exponential backoff, and moved to the dead letter at `maxAttempts`.
 */
export type Handler<P = unknown> = (
  delivery: Delivery<P>,
  // biome-ignore lint/suspicious/noConfusingVoidType: `async () => {}` returns Promise<void>, which acks.
) => HandlerResult | void | Promise<HandlerResult | void>;
