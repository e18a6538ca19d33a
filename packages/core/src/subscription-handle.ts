/**
 * What a caller holds of a running subscription (`broker.subscribe`'s result) and its counters:
 * types only, apart from the runner so that the broker's events can name them.
 *
 * @module
 */
import type { TableDefinition } from "./table.js";

/** Counters of a subscription, for progress displays and health checks. */
export interface SubscriptionStats {
  /** Rows claimed. */
  claimed: number;
  /** Rows settled by ack or drop. */
  acked: number;
  /** Rows given back by retry, retryAfter or a handler that threw. */
  retried: number;
  /** Rows moved to the dead letter. */
  deadLettered: number;
  /** Handlers that threw (or returned something that is not an outcome). */
  failed: number;
  /** Settlements that failed (lease lost, batch rolled back, database errors). */
  settleErrors: number;
  /** Claims that failed (database errors); the loop goes on after a pause. */
  claimErrors: number;
  /** Handlers that ran past the subscription's `timeout` and its grace (counted in `failed` too). */
  timedOut: number;
}

/** A running subscription. */
export interface Subscription {
  /** The table it claims from. */
  readonly table: TableDefinition;
  /** The group it claims from (`null`: rows without a group). */
  readonly group: string | null;
  /** Its counters. */
  readonly stats: Readonly<SubscriptionStats>;
  /** How many handlers run in parallel. */
  readonly workers: number;
  /** How many rows one claim takes at most (never more than the free workers plus the free prefetch room). */
  readonly batch: number;
  /** How many rows the subscription holds ahead of its workers at most (`prefetch`, default 0). */
  readonly prefetch: number;
  /** How many deliveries are in work now (handlers started, not yet settled). */
  readonly inWork: number;
  /**
   * How many rows the subscription holds now: deliveries in work (settlements in flight
   * included) plus rows claimed ahead that wait for a worker. Rows whose handlers have not sent
   * their settlement never pass `workers + prefetch`; rows whose settlements are in flight, up to
   * as many more (twice as many in the lease form with `prefetch`), until those commit (the next
   * claim runs beside a settlement's commit).
   */
  readonly held: number;
  /**
   * Resolves once a claim that began after the call found no row while no delivery was in work:
   * every row due then has been claimed and settled. Wakes the claim loop, so it claims at once.
   * Resolves at once when the subscription is stopped. Used by `drainTable` of `@rowclaim/core/testing`.
   */
  idle(): Promise<void>;
  /**
   * Stops claiming, waits up to `timeout` ms (default 30 s) for deliveries in work to settle,
   * then gives up the rest (their settlements fail with `CLOSED`) and releases the claimer.
   */
  stop(options?: { timeout?: number }): Promise<void>;
}
