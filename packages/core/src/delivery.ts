/**
 * What a handler receives.
 *
 * @module
 */
import type { Outcome } from "./outcomes.js";
import type { Headers, RowId } from "./rows.js";
import type { ClaimFormName, TableDefinition } from "./table.js";
import type { TransactionBody } from "./transactional.js";

/**
 * One claimed row handed to a handler.
 *
 * @typeParam C the client type of the broker's driver, which {@link Delivery.transaction} bodies receive.
 */
export interface Delivery<P = unknown, H = Headers, C = unknown> {
  /** The row's primary key. */
  readonly id: RowId;
  /** The decoded payload. */
  readonly payload: P;
  /** The attempt as it stood before this claim: the first delivery reads 1 in every form. */
  readonly attempt: number;
  /** The row's group, or `null`. */
  readonly group: string | null;
  /** The row's headers (`{}` where none). */
  readonly headers: H;
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
  /**
   * Exactly-once effects for writes to the queue's own database: runs `body` with the driver's
   * client inside a transaction, then settles the row by the outcome `body` returns (nothing
   * acks), last, inside the same transaction. The body's writes commit with the settlement or
   * not at all: a crash, a lost lease or a failed settlement leaves none of them behind. Calls to
   * other systems made by the body are not covered.
   *
   * Row lock form: the claim's own transaction, behind a savepoint (resolves once the batch
   * committed). Lease form: a transaction of its own; a row that no longer holds the delivery's
   * lease rolls it back and rejects with `LEASE_LOST`. Advisory lock form: the delivery's own
   * connection, the key held. SQLite: an IMMEDIATE transaction on the database handle, and
   * `body` must be synchronous (return the outcome, not a promise). When `body` throws, its
   * writes are rolled back, the row stays unsettled (the handler's failure then retries it) and
   * the error is rethrown.
   *
   * @throws {UnsupportedFormError} the driver offers no transactional handlers in this form.
   * @throws {LeaseLostError} the lease was taken over; the body's writes were rolled back.
   * @throws {BatchRolledBackError} another settlement of the same row lock batch failed.
   * @throws {InvalidArgumentError} the delivery was already settled, or (SQLite) `body` returned a promise.
   */
  transaction(body: TransactionBody<C>): Promise<void>;
}

/** What a handler may return: an outcome, or nothing (ack). */
export type HandlerResult = Outcome | undefined;

/**
 * A subscription's handler. It returns the outcome to settle by; returning nothing acks (unless
 * it already called `delivery.settle`). A handler that throws is retried with capped
 * exponential backoff, and moved to the dead letter at `maxAttempts`.
 */
export type Handler<P = unknown, H = Headers, C = unknown> = (
  delivery: Delivery<P, H, C>,
  // biome-ignore lint/suspicious/noConfusingVoidType: `async () => {}` returns Promise<void>, which acks.
) => HandlerResult | void | Promise<HandlerResult | void>;
