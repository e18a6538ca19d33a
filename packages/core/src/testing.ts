/**
 * `@rowclaim/core/testing`: helpers for a service's own tests.
 *
 * {@link drainTable} runs a table dry through the broker's subscriptions and reports what each
 * row was settled as, so that a test can publish, drain and assert in three lines:
 *
 * ```ts
 * await broker.publish(emails, { to: "a@example.com" });
 * const report = await drainTable(broker, emails);
 * expect(report.outcomes).toEqual({ ack: 1 });
 * ```
 *
 * @module
 */
import type { Broker } from "./broker.js";
import type { BrokerEventName } from "./events.js";
import type { Outcome } from "./outcomes.js";
import type { RowId } from "./rows.js";
import type { TableDefinition } from "./table.js";

/** What happened to one delivery during a drain. */
export interface DrainedDelivery {
  /** The row's primary key. */
  readonly id: RowId;
  /** The attempt the delivery reported. */
  readonly attempt: number;
  /** The row's group, or `null`. */
  readonly group: string | null;
  /** The outcome the row was settled by, or `"settleError"` where the settlement failed (`error` says why). */
  readonly outcome: Outcome["kind"] | "settleError";
  /** The handler's error (the row was then retried or dead-lettered), or the settlement's. */
  readonly error?: unknown;
}

/** What {@link drainTable} saw. */
export interface DrainReport {
  /** Every delivery settled during the drain, in the order they settled. */
  readonly deliveries: readonly DrainedDelivery[];
  /** How many deliveries ended with each outcome, for example `{ ack: 2, deadLetter: 1 }`. */
  readonly outcomes: Readonly<Partial<Record<DrainedDelivery["outcome"], number>>>;
  /** The last delivery of each row, by id (as a string): what the row stands as now. */
  readonly rows: ReadonlyMap<string, DrainedDelivery>;
}

/** How {@link drainTable} runs. */
export interface DrainOptions {
  /** How long to wait for the table to run dry, in milliseconds. Default 30 000. */
  readonly timeout?: number;
}

/**
 * Waits until the broker's subscriptions to `table` have claimed and settled every row that is
 * due (a row retried to a later time is not waited for), and reports how each delivery ended.
 * The table must have at least one subscription on `broker`; rows are handled by those
 * subscriptions' handlers, as in production.
 *
 * @throws {Error} when the broker has no subscription to the table, or the table does not run
 * dry within `timeout`.
 */
export async function drainTable(
  broker: Broker,
  table: TableDefinition,
  options: DrainOptions = {},
): Promise<DrainReport> {
  const timeout = options.timeout ?? 30_000;
  const deliveries: DrainedDelivery[] = [];
  const failures = new Map<string, unknown>();
  const mine = (event: { readonly table: TableDefinition }): boolean => event.table.name === table.name;
  const removers: (() => void)[] = [];
  const on: Broker["on"] = (name, listener) => {
    const remove = broker.on(name, listener);
    removers.push(remove);
    return remove;
  };
  let events = 0;
  on("failed", (event) => {
    if (!mine(event)) return;
    events += 1;
    failures.set(String(event.id), event.error);
  });
  on("settled", (event) => {
    if (!mine(event)) return;
    events += 1;
    const error = failures.get(String(event.id));
    failures.delete(String(event.id));
    deliveries.push({
      id: event.id,
      attempt: event.attempt,
      group: event.group,
      outcome: event.outcome,
      ...(error === undefined ? {} : { error }),
    });
  });
  const settleFailed = (event: {
    readonly table: TableDefinition;
    readonly id: RowId;
    readonly attempt: number;
    readonly group: string | null;
    readonly error: unknown;
  }): void => {
    if (!mine(event)) return;
    events += 1;
    failures.delete(String(event.id));
    deliveries.push({
      id: event.id,
      attempt: event.attempt,
      group: event.group,
      outcome: "settleError",
      error: event.error,
    });
  };
  const settleEvents: BrokerEventName[] = ["leaseLost", "settleError"];
  for (const name of settleEvents) on(name as "settleError", settleFailed);

  let timer: NodeJS.Timeout | undefined;
  try {
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`drainTable(${table.name}): the table did not run dry within ${timeout} ms.`)),
        timeout,
      );
    });
    for (;;) {
      const subscriptions = broker.subscriptions.filter(
        (subscription) => subscription.table.name === table.name,
      );
      if (subscriptions.length === 0) {
        throw new Error(
          `drainTable(${table.name}): the broker has no subscription to this table; subscribe a handler first.`,
        );
      }
      const before = events;
      await Promise.race([Promise.all(subscriptions.map((subscription) => subscription.idle())), deadline]);
      // A settlement in one subscription may make rows due for another: drain until a round settles nothing.
      if (events === before) break;
    }
  } finally {
    clearTimeout(timer);
    for (const remove of removers) remove();
  }

  const outcomes: Partial<Record<DrainedDelivery["outcome"], number>> = {};
  const rows = new Map<string, DrainedDelivery>();
  for (const delivery of deliveries) {
    outcomes[delivery.outcome] = (outcomes[delivery.outcome] ?? 0) + 1;
    rows.set(String(delivery.id), delivery);
  }
  return { deliveries, outcomes, rows };
}
