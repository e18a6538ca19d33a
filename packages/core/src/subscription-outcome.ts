/**
 * The outcome → settlement mapping of a subscription, as pure functions: what a handler's
 * result (a return value, a throw, a timeout, a payload the schema refuses, an attempt past
 * `maxAttempts`) is settled by, which settlement an outcome becomes on a table, which counter
 * it moves, when its row is due again, and what a failed settlement leaves for the row's next
 * claim. The delivery runner (`subscription-delivery.ts`) applies them.
 *
 * | the delivery                              | its outcome                                             |
 * | ----------------------------------------- | ------------------------------------------------------- |
 * | the handler returns nothing               | `ack()`                                                 |
 * | the handler returns an outcome            | that outcome                                            |
 * | the handler returns anything else         | a handler failure (`INVALID_ARGUMENT` as its error)     |
 * | the handler throws, or runs out of time   | a handler failure: {@link failureOutcome}               |
 * | the payload fails the table's schema      | `deadLetter()` with a target, else a handler failure    |
 * | the attempt is past `maxAttempts`         | `deadLetter()`, without running the handler             |
 * | its last settlement failed (remembered)   | what {@link rememberAfter} kept, without the handler    |
 *
 * @module
 */
import { type BackoffOptions, backoffDelay } from "./backoff.js";
import { BrokerError, type BrokerErrorCode, DeclarationError, InvalidArgumentError } from "./errors.js";
import type { HeldRow } from "./held-row.js";
import { ack, deadLetter, isOutcome, type Outcome, retryAfter } from "./outcomes.js";
import type { ClaimedRow } from "./rows.js";
import type { Settlement } from "./settlement.js";
import type { DeadLetterTarget, TableDefinition } from "./table.js";
import { ceilToSecond } from "./tokens.js";

/** The settings of a subscription that decide what a failure is settled by. */
export interface OutcomePolicy {
  /** The attempt at which a failure goes to the dead letter (`maxAttempts`), if any. */
  readonly maxAttempts: number | undefined;
  /** Where dead letters go (the table's or the subscription's `deadLetter`), if anywhere. */
  readonly deadLetter: DeadLetterTarget | undefined;
  /** The retry delay of a failure (`backoff`). */
  readonly backoff: BackoffOptions;
}

/**
 * Whether an outcome finishes its row (ack, drop): its worker is free once the settlement is
 * sent. A retry or a dead letter gives the row back first, so that the next claim sees it where
 * it belongs.
 */
export function finishesRow(outcome: Outcome): boolean {
  return outcome.kind === "ack" || outcome.kind === "drop";
}

/** A retry after the backoff of `attempt` (held as `retry-delay.ts` says where the table has no `runAt`). */
export function retryOutcome(attempt: number, policy: OutcomePolicy): Outcome {
  return retryAfter(backoffDelay(attempt, policy.backoff));
}

/** What a failed attempt (a throw, a timeout) is settled by: the dead letter at `maxAttempts`, else a retry with backoff. */
export function failureOutcome(attempt: number, policy: OutcomePolicy): Outcome {
  const { maxAttempts } = policy;
  if (maxAttempts !== undefined && attempt >= maxAttempts) return deadLetter();
  return retryOutcome(attempt, policy);
}

/** What a payload that fails the table's schema is settled by: it will fail again, so the dead letter where there is one. */
export function invalidPayloadOutcome(attempt: number, policy: OutcomePolicy): Outcome {
  return policy.deadLetter !== undefined ? deadLetter() : failureOutcome(attempt, policy);
}

/** Whether `attempt` is past `maxAttempts` (crashed deliveries count too): its row goes to the dead letter unhandled. */
export function pastMaxAttempts(attempt: number, policy: OutcomePolicy): boolean {
  return policy.maxAttempts !== undefined && attempt > policy.maxAttempts;
}

/**
 * The outcome of a handler's return value: nothing acks, an outcome is itself.
 *
 * @throws {InvalidArgumentError} anything else (the attempt then counts as a handler failure).
 */
export function handlerOutcome(result: unknown): Outcome {
  if (result === undefined) return ack();
  if (isOutcome(result)) return result;
  throw new InvalidArgumentError(
    `the handler returned ${JSON.stringify(result)}, which is not an outcome (ack(), retry(), …)`,
  );
}

/**
 * The outcome of a transaction body's return value: nothing acks, an outcome is itself.
 *
 * @throws {InvalidArgumentError} anything else (the body's writes are then rolled back).
 */
export function bodyOutcome(returned: unknown, table: TableDefinition): Outcome {
  if (returned === undefined) return ack();
  if (isOutcome(returned)) return returned;
  throw new InvalidArgumentError(
    `Table "${table.name}": the transaction body returned ${JSON.stringify(returned)}, which is not an outcome (ack(), retry(), …).`,
    { table: table.name },
  );
}

/**
 * The delay a delivery holds itself (`retry-delay.ts`): that of a retry after a delay on a
 * table that cannot write it (no `runAt`); `undefined` for every other outcome.
 */
export function heldDelayMs(outcome: Outcome, table: TableDefinition): number | undefined {
  return outcome.kind === "retryAfter" && outcome.delayMs > 0 && table.columns.runAt === undefined
    ? outcome.delayMs
    : undefined;
}

/**
 * The delay a settlement leaves out: that of a `retryAfter` on a table without `runAt`, which
 * releases the row due at once; `undefined` for every other outcome.
 */
export function droppedDelayMs(outcome: Outcome, table: TableDefinition): number | undefined {
  return outcome.kind === "retryAfter" && table.columns.runAt === undefined ? outcome.delayMs : undefined;
}

/**
 * The settlement `outcome` becomes on `table`: an ack or drop deletes the row (or marks it
 * processed, by the host's wall clock), a retry releases it (due after the delay, by `now`,
 * where the table has `runAt`), a dead letter moves it to the group or table `policy` names.
 *
 * @throws {DeclarationError} a dead letter with no target.
 */
export function settlementFor(
  outcome: Outcome,
  table: TableDefinition,
  policy: OutcomePolicy,
  now: () => number,
): Settlement {
  const { columns } = table;
  switch (outcome.kind) {
    case "ack":
    case "drop":
      return columns.processedAt === undefined
        ? { kind: "delete" }
        : { kind: "markProcessed", at: new Date() };
    case "retry":
      return { kind: "release", runAt: null };
    case "retryAfter":
      if (columns.runAt === undefined) return { kind: "release", runAt: null };
      return { kind: "release", runAt: new Date(now() + outcome.delayMs) };
    case "deadLetter": {
      const target = policy.deadLetter;
      if (target === undefined) {
        throw new DeclarationError(
          `Table "${table.name}": the handler returned deadLetter(), but neither the table nor the subscription names a deadLetter target. Set deadLetter: { group } or { table } with maxAttempts.`,
          { table: table.name },
        );
      }
      return "group" in target
        ? { kind: "moveToGroup", group: target.group }
        : { kind: "moveToTable", table: target.table };
    }
  }
}

/** The counter of {@link SubscriptionStats} a settlement moves. */
export type SettledCounter = "acked" | "retried" | "deadLettered";

/** Which counter `settlement` moves: acked (delete, markProcessed), retried (release) or deadLettered (move). */
export function counterOf(settlement: Settlement): SettledCounter {
  switch (settlement.kind) {
    case "delete":
    case "markProcessed":
      return "acked";
    case "release":
      return "retried";
    case "moveToGroup":
    case "moveToTable":
      return "deadLettered";
  }
}

/**
 * Whether a settlement can make a row claimable for this subscription: a released row is due
 * again; in a FIFO group the next row becomes the head; in the advisory form the key is free
 * for the next row that shares it. The claim loop, which may be sleeping after a claim that
 * found nothing, is then woken instead of waiting out its poll interval.
 */
export function freesRows(settlement: Settlement, table: TableDefinition): boolean {
  return settlement.kind === "release" || table.fifo || table.form === "advisory";
}

/** When the row a settlement released is due again, where it named a time (the claim loop wakes then). */
export function dueAgainAt(settlement: Settlement): Date | undefined {
  return settlement.kind === "release" && settlement.runAt !== null ? settlement.runAt : undefined;
}

/** When a lease moved to `dueMs` (rounded up to a whole second, as leases are) has run out: the row is claimable then. */
export function leaseDueAt(dueMs: number): number {
  return ceilToSecond(dueMs).getTime() + 1;
}

/**
 * Errors after which a settlement is not remembered: the delivery was given up or lost, or
 * the connection went (as a crash, it spends no attempt), or the outcome itself was refused.
 */
const NOT_REMEMBERED: readonly BrokerErrorCode[] = [
  "CLOSED",
  "LEASE_LOST",
  "CONNECTION_LOST",
  "CONNECTION_TIMEOUT",
  "DECLARATION",
  "INVALID_ARGUMENT",
];

/** What a row's next claim settles it by, without running the handler, when it reads `attempt`. */
export interface RememberedSettlement {
  /** The attempt the next claim reads while nothing of the failed settlement landed. */
  readonly attempt: number;
  /** The outcome that claim settles by. */
  readonly outcome: Outcome;
}

/**
 * What a row's next claim is settled by when its settlement by `outcome` failed with `error`,
 * where the failure shows nothing of the settlement landed (else `undefined`):
 *
 * - `BATCH_ROLLED_BACK` (row lock form, not transactional): another settlement of the batch
 *   failed; the row's own outcome is settled again on its next claim (the handler ran). A
 *   transactional body's writes rolled back with the batch: its handler runs again.
 * - a database error (the row's own settlement refused, say by a constraint): the next claim
 *   settles the row as a handler failure of this attempt (a retry with backoff, counting the
 *   attempt, or the dead letter at `maxAttempts`; a dead letter the database refused becomes a
 *   retry with backoff). In the row lock form the failed settlement rolled back with its
 *   batch and counted nothing: this is where its attempt is counted, so that a row whose
 *   settlement always fails is tried at most `maxAttempts` times, with backoff, then
 *   dead-lettered. A crash (or a lost connection) is not remembered and spends no attempt.
 *
 * The next claim reads the same attempt in the row lock form (which counts attempts at
 * settlement), the next one in the others (which count them at claim).
 */
export function rememberAfter(
  failed: { readonly outcome: Outcome; readonly error: unknown; readonly transactional: boolean },
  row: ClaimedRow,
  table: TableDefinition,
  policy: OutcomePolicy,
): RememberedSettlement | undefined {
  const { outcome, error } = failed;
  if (NOT_REMEMBERED.some((code) => BrokerError.is(error, code))) return undefined;
  const rowLock = table.form === "rowLock";
  let next: Outcome;
  if (BrokerError.is(error, "BATCH_ROLLED_BACK")) {
    if (!rowLock || failed.transactional) return undefined;
    next = outcome;
  } else {
    next =
      outcome.kind === "deadLetter" ? retryOutcome(row.attempt, policy) : failureOutcome(row.attempt, policy);
  }
  return { attempt: rowLock ? row.attempt : row.attempt + 1, outcome: next };
}

/** How many rows whose settlement failed a subscription remembers at most (the oldest are forgotten). */
export const MAX_REMEMBERED = 10_000;

/**
 * The rows whose settlement failed in this process, by id, with what {@link rememberAfter}
 * kept for their next claim; at most {@link MAX_REMEMBERED}, the oldest forgotten first.
 */
export class RememberedSettlements {
  readonly #byId = new Map<string, RememberedSettlement>();

  /** How many rows are remembered. */
  get size(): number {
    return this.#byId.size;
  }

  /** Remembers `remembered` for `row` (replacing what was kept for it). */
  keep(row: HeldRow["row"], remembered: RememberedSettlement): void {
    const key = String(row.id);
    this.#byId.delete(key);
    this.#byId.set(key, remembered);
    if (this.#byId.size > MAX_REMEMBERED) this.#byId.delete(this.#byId.keys().next().value as string);
  }

  /**
   * The outcome kept for `row`'s claim now, if any: the row is forgotten either way, and what
   * was kept applies only where the claim reads the attempt it was kept for.
   */
  take(row: HeldRow["row"]): Outcome | undefined {
    if (this.#byId.size === 0) return undefined;
    const key = String(row.id);
    const remembered = this.#byId.get(key);
    if (remembered === undefined) return undefined;
    this.#byId.delete(key);
    return remembered.attempt === row.attempt ? remembered.outcome : undefined;
  }
}
