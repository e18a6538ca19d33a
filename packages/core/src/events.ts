/**
 * The broker's typed events: what happened to each row and subscription, for metrics, traces
 * and tests. `broker.on("settled", (event) => …)` returns a function that removes the listener.
 *
 * Events cost nothing when nobody listens: the broker asks {@link BrokerEvents.has} before it
 * builds an event object.
 *
 * @module
 */
import type { Outcome } from "./outcomes.js";
import type { RowId } from "./rows.js";
import type { Subscription } from "./subscription-handle.js";
import type { TableDefinition } from "./table.js";

/** Fields every row event has. */
export interface RowEvent {
  /** The table the row belongs to. */
  readonly table: TableDefinition;
  /** The subscription that claimed the row. */
  readonly subscription: Subscription;
  /** The row's primary key. */
  readonly id: RowId;
  /** The attempt the delivery reports (1 on the first delivery). */
  readonly attempt: number;
  /** The row's group, or `null`. */
  readonly group: string | null;
}

/** A row was claimed. */
export interface ClaimedEvent extends RowEvent {
  /** How long the claim that took the row ran, in milliseconds. */
  readonly claimMs: number;
}

/** A row was settled: its outcome is in the database. */
export interface SettledEvent extends RowEvent {
  /** The outcome the row was settled by. */
  readonly outcome: Outcome["kind"];
  /** From the claim to the settlement's commit, in milliseconds. */
  readonly durationMs: number;
  /**
   * How long the handler ran, in milliseconds: until it returned, or until it settled the row itself
   * (`delivery.settle()`, or the commit of `delivery.transaction()`), whichever came first. 0 where it
   * did not run (a row past `maxAttempts`, a payload that failed the schema).
   */
  readonly handlerMs: number;
}

/** A handler threw, returned something that is not an outcome, ran past its `timeout` and grace (`error`: a `HandlerTimeoutError`, code `HANDLER_TIMEOUT`), or the payload failed the table's schema. */
export interface FailedEvent extends RowEvent {
  /** What went wrong. */
  readonly error: unknown;
  /** What happens to the row: given back to retry, or moved to the dead letter. */
  readonly next: "retry" | "deadLetter";
}

/** A lease settlement found that another claim holds the row: nothing changed. */
export interface LeaseLostEvent extends RowEvent {
  /** The `LeaseLostError`. */
  readonly error: unknown;
}

/** A settlement failed for another reason (database error, batch rolled back, broker closed). */
export interface SettleErrorEvent extends RowEvent {
  /** The error. */
  readonly error: unknown;
}

/** A claim failed; the subscription tries again after its poll interval. */
export interface ClaimErrorEvent {
  /** The table. */
  readonly table: TableDefinition;
  /** The subscription whose claim failed. */
  readonly subscription: Subscription;
  /** The error. */
  readonly error: unknown;
}

/** A subscription started or stopped. */
export interface SubscriptionEvent {
  /** The table. */
  readonly table: TableDefinition;
  /** The subscription. */
  readonly subscription: Subscription;
}

/** Every event of a broker, by name. */
export interface BrokerEventMap {
  /** A row was claimed. */
  claimed: ClaimedEvent;
  /** A row was settled, with its outcome and durations. */
  settled: SettledEvent;
  /** A delivery failed (handler threw, bad result, payload failed the schema). */
  failed: FailedEvent;
  /** A lease settlement found the lease lost. */
  leaseLost: LeaseLostEvent;
  /** A settlement failed for another reason. */
  settleError: SettleErrorEvent;
  /** A claim failed. */
  claimError: ClaimErrorEvent;
  /** A subscription's claim loop started. */
  subscriptionStarted: SubscriptionEvent;
  /** A subscription stopped and released its claimer. */
  subscriptionStopped: SubscriptionEvent;
}

/** The name of a broker event. */
export type BrokerEventName = keyof BrokerEventMap;

/** A listener of one broker event. */
export type BrokerEventListener<Name extends BrokerEventName> = (event: BrokerEventMap[Name]) => void;

/**
 * The listeners of a broker's events. A listener that throws is reported to `onListenerError`
 * and does not disturb the broker or the other listeners.
 */
export class BrokerEvents {
  readonly #listeners: { [Name in BrokerEventName]?: Set<BrokerEventListener<Name>> } = {};
  readonly #onListenerError: (name: BrokerEventName, error: unknown) => void;

  constructor(onListenerError: (name: BrokerEventName, error: unknown) => void) {
    this.#onListenerError = onListenerError;
  }

  /** Adds a listener; returns a function that removes it. */
  on<Name extends BrokerEventName>(name: Name, listener: BrokerEventListener<Name>): () => void {
    let set = this.#listeners[name] as Set<BrokerEventListener<Name>> | undefined;
    if (set === undefined) {
      set = new Set();
      (this.#listeners as Record<string, unknown>)[name] = set;
    }
    set.add(listener);
    return () => this.off(name, listener);
  }

  /** Removes a listener added with {@link BrokerEvents.on}. */
  off<Name extends BrokerEventName>(name: Name, listener: BrokerEventListener<Name>): void {
    const set = this.#listeners[name] as Set<BrokerEventListener<Name>> | undefined;
    if (set === undefined) return;
    set.delete(listener);
    if (set.size === 0) delete this.#listeners[name];
  }

  /** Whether anyone listens to `name`: ask before building the event. */
  has(name: BrokerEventName): boolean {
    return this.#listeners[name] !== undefined;
  }

  /** Calls every listener of `name` with `event`. */
  emit<Name extends BrokerEventName>(name: Name, event: BrokerEventMap[Name]): void {
    const set = this.#listeners[name] as Set<BrokerEventListener<Name>> | undefined;
    if (set === undefined) return;
    for (const listener of set) {
      try {
        listener(event);
      } catch (error) {
        this.#onListenerError(name, error);
      }
    }
  }
}
