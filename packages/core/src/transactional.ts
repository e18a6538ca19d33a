/**
 * Transactional handlers: a handler's own writes to the queue's database commit in the same
 * transaction as its settlement, in every claim form. The handler calls
 * `delivery.transaction(body)`; `body` receives the driver's own client, inside a transaction,
 * runs its statements and returns the outcome; the settlement then runs last, inside the same
 * transaction, and everything commits together or not at all.
 *
 * - Row lock form: the claim's own transaction, behind a savepoint per body.
 * - Lease form: a transaction of its own on one connection; the fenced settlement runs last, and
 *   a row that no longer holds the delivery's token rolls everything back (`LEASE_LOST`).
 * - Advisory lock form: a transaction on the delivery's own connection, the key still held.
 * - SQLite: an IMMEDIATE transaction on the database handle; the body must be synchronous.
 *
 * @module
 */
import type { Driver } from "./driver.js";
import { UnsupportedFormError } from "./errors.js";
import { formLabels } from "./form-labels.js";
import type { Outcome } from "./outcomes.js";
import type { Settlement } from "./settlement.js";
import type { ClaimFormName, TableDefinition } from "./table.js";
import type { TransactionWork } from "./transaction-work.js";

/**
 * What a transactional body returns: the outcome to settle by (nothing acks). On SQLite the body
 * must return it synchronously, not as a promise.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: `async () => {}` returns Promise<void>, which acks.
export type TransactionResult = Outcome | undefined | void;

/**
 * The body of `delivery.transaction(body)`: runs the handler's statements on `client`, the
 * driver's own client inside the transaction, and returns the outcome.
 *
 * @typeParam C the driver's client type (`pg.PoolClient`, a mysql2 `PoolConnection`, a
 * better-sqlite3 `Database`), taken from the broker's driver.
 */
export type TransactionBody<C = unknown> = (client: C) => TransactionResult | Promise<TransactionResult>;

/**
 * The type of the client a driver hands to transactional bodies, read from the driver's type-only
 * `"~transactionClient"` property; `unknown` where the driver does not say.
 */
export type TransactionClientOf<D> = D extends { readonly "~transactionClient"?: infer C }
  ? unknown extends C
    ? unknown
    : Exclude<C, undefined>
  : unknown;

/** Whether a value is a promise (or any thenable). */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * Wraps `work` so that the caller learns whether it failed (the body threw, or its outcome could
 * not be turned into a settlement) as opposed to the settlement or the commit failing after it.
 * Keeps a synchronous body synchronous.
 */
export function watchWork(work: TransactionWork): { readonly work: TransactionWork; failed(): boolean } {
  let failed = false;
  const watched: TransactionWork = (client) => {
    let result: Settlement | Promise<Settlement>;
    try {
      result = work(client);
    } catch (error) {
      failed = true;
      throw error;
    }
    if (!isPromiseLike(result)) return result;
    return Promise.resolve(result).catch((error: unknown) => {
      failed = true;
      throw error;
    });
  };
  return { work: watched, failed: () => failed };
}

/**
 * Builds the work a claimer runs from a handler's body: runs the body, then turns its outcome
 * into a settlement with `settlementFor` (nothing returned acks). Keeps a synchronous body
 * synchronous.
 */
export function bodyWork(
  body: TransactionBody<never>,
  settlementFor: (outcome: Outcome | undefined) => Settlement,
): TransactionWork {
  return (client) => {
    const result = (body as TransactionBody<unknown>)(client);
    if (isPromiseLike(result)) {
      return Promise.resolve(result).then((outcome) => settlementFor(outcome ?? undefined));
    }
    return settlementFor(result ?? undefined);
  };
}

/** Whether `driver` offers transactional handlers in `form`. */
export function offersTransactional(driver: Pick<Driver, "capabilities">, form: ClaimFormName): boolean {
  return (driver.capabilities.transactionalHandlers ?? []).includes(form);
}

/**
 * Refuses a subscription that asks for transactional handlers (`transactional: true`) on a
 * driver that does not offer them in the table's form.
 *
 * @throws {UnsupportedFormError} naming the table, the form, the driver and the forms it offers.
 */
export function assertTransactionalOffered(
  driver: Pick<Driver, "capabilities" | "name">,
  table: TableDefinition,
): void {
  if (offersTransactional(driver, table.form)) return;
  const offered = driver.capabilities.transactionalHandlers ?? [];
  throw new UnsupportedFormError(
    `Table "${table.name}" (${formLabels[table.form]} form): the subscription asks for transactional handlers, which the ${driver.name} driver does not offer in this form (capabilities.transactionalHandlers: ${offered.length === 0 ? "none" : offered.map((form) => formLabels[form]).join(", ")}). Drop \`transactional: true\` and settle by the handler's return value, or use a driver that offers them.`,
    { table: table.name },
  );
}

/**
 * The error for a driver that lists a form in `capabilities.transactionalHandlers` but whose
 * claimer for it has no `transaction` method: a bug in the driver, reported at subscribe.
 */
export function transactionMissing(
  driver: Pick<Driver, "name">,
  table: TableDefinition,
): UnsupportedFormError {
  return new UnsupportedFormError(
    `Driver "${driver.name}" lists the ${formLabels[table.form]} form in capabilities.transactionalHandlers, but the claimer it opened for table "${table.name}" has no transaction() method. This is a bug in the driver.`,
    { table: table.name },
  );
}

export type { TransactionWork } from "./transaction-work.js";
