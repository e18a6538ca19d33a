/**
 * The set-up the sub-suites that count what a subscription holds share: numbered rows published,
 * handlers held in work at a gate until the test opens it, and the wait for the table to empty.
 *
 * @module
 */
import {
  ack,
  type Broker,
  type RowId,
  type SubscribeOptions,
  type Subscription,
  type TableDefinition,
} from "@rowclaim/core";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import { type Gate, waitFor } from "./wait.js";

/** A subscription whose handlers record each delivery, then wait at {@link GatedSubscription.release}. */
export interface GatedSubscription<P = unknown> {
  /** The subscription itself, for its counts (`held`, `inWork`, `stats`). */
  readonly subscription: Subscription;
  /** Every delivery a handler started on, in the order the handlers started. */
  readonly seen: Seen<P>[];
  /** The gate every handler waits at before it acks (opened at the latest when the test ends). */
  readonly release: Gate;
}

/**
 * Subscribes to `table` on `broker` with `options`: each handler records its delivery, waits at a
 * new gate of `fx`, then acks.
 */
export async function subscribeGated<P = unknown>(
  fx: Fixture,
  broker: Broker,
  table: TableDefinition,
  options: SubscribeOptions,
): Promise<GatedSubscription<P>> {
  const release = fx.gate();
  const seen: Seen<P>[] = [];
  const subscription = await broker.subscribe<P>(
    table,
    async (delivery) => {
      see(seen, delivery);
      await release.opened;
      return ack();
    },
    options,
  );
  return { subscription, seen, release };
}

/** Publishes `count` rows with payloads 0, 1, …, each with `fields` too; returns their ids in order. */
export function publishNumbered(
  broker: Broker,
  table: TableDefinition,
  count: number,
  fields: { readonly group?: string } = {},
): Promise<readonly RowId[]> {
  return broker.publishMany(
    table,
    Array.from({ length: count }, (_, n) => ({ payload: n, ...fields })),
  );
}

/** Waits until `table` has no row left, as a second connection sees it (`what` names the wait). */
export async function waitForEmpty(
  fx: Fixture,
  table: TableDefinition,
  what = "every row to be acked",
  options: { timeoutMs?: number } = {},
): Promise<void> {
  await waitFor(what, async () => (await fx.rows(table)).length === 0, options);
}
