/**
 * The memory claimers' optional capabilities, and {@link withoutCapabilities}: a claimer that
 * leaves some of them out, as a driver that offers fewer does, so that a test runs core's
 * fallbacks on the same reference driver.
 *
 * @module
 */
import type { Claimer } from "@rowclaim/core/driver";

/**
 * An optional claimer method of core's contract that the memory claimers offer: `settleMany`
 * and `claimWithAcks` (lease), `claimWithAcks` (advisory), `endBatchWithClaim` (row lock),
 * `transaction` (every form; left out, the driver offers no transactional handlers).
 */
export type MemoryOptionalMethod = "settleMany" | "claimWithAcks" | "endBatchWithClaim" | "transaction";

/** `claimer` without the methods of `left` (every other member is the claimer's own, bound to it). */
export function withoutCapabilities(claimer: Claimer, left: readonly MemoryOptionalMethod[]): Claimer {
  if (left.length === 0) return claimer;
  const omitted = new Set<string | symbol>(left);
  return new Proxy(claimer, {
    get(target, property) {
      if (omitted.has(property)) return undefined;
      const own: unknown = Reflect.get(target, property, target);
      return typeof own === "function" ? own.bind(target) : own;
    },
    has(target, property) {
      return !omitted.has(property) && Reflect.has(target, property);
    },
  });
}
