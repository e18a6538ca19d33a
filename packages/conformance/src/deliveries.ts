/**
 * Recording what handlers received, for assertions after the fact.
 *
 * @module
 */
import type { Delivery } from "@rowclaim/core";
import { idKey } from "./values.js";

/** One delivery as a test saw it. */
export interface Seen<P = unknown> {
  /** The row id as a string. */
  readonly id: string;
  readonly attempt: number;
  readonly payload: P;
  readonly group: string | null;
  /** `Date.now()` when the handler started. */
  readonly at: number;
  readonly delivery: Delivery<P>;
}

/** Records a delivery into `into` and returns the record. */
export function see<P>(into: Seen<P>[], delivery: Delivery<P>): Seen<P> {
  const seen: Seen<P> = {
    id: idKey(delivery.id),
    attempt: delivery.attempt,
    payload: delivery.payload,
    group: delivery.group,
    at: Date.now(),
    delivery,
  };
  into.push(seen);
  return seen;
}

/** How many times each id was delivered. */
export function countById(seen: readonly { readonly id: string }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { id } of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}
