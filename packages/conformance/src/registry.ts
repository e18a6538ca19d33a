/**
 * How the suite registers its tests: every test gets a fresh {@link Fixture} that it cleans up
 * afterwards; a test the harness opts out of is registered as skipped with the reason in its
 * name; and one check fails when an opt-out names no test of the suite.
 *
 * @module
 */
import { describe, expect, it } from "vitest";
import { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";

/** How long one conformance test may run before vitest fails it. */
export const TEST_TIMEOUT_MS = 90_000;

const names = new WeakMap<ConformanceHarness, Set<string>>();
const checked = new WeakSet<ConformanceHarness>();

function registry(harness: ConformanceHarness): Set<string> {
  let set = names.get(harness);
  if (set === undefined) {
    set = new Set();
    names.set(harness, set);
  }
  return set;
}

/** The titles of the tests registered so far for `harness` (what `harness.skip` may name). */
export function registeredTests(harness: ConformanceHarness): readonly string[] {
  return [...registry(harness)];
}

/**
 * Registers one conformance test named `title` (titles are unique across the suite: they are
 * what `harness.skip` names). The body gets a fresh fixture, cleaned up however the body ends.
 */
export function conformanceTest(
  harness: ConformanceHarness,
  suite: string,
  title: string,
  body: (fx: Fixture) => Promise<void>,
): void {
  const set = registry(harness);
  if (set.has(title)) throw new Error(`@rowclaim/conformance: two tests are named "${title}".`);
  set.add(title);
  const reason = harness.skip?.[title];
  if (reason !== undefined) {
    it.skip(`${title} [opted out by the ${harness.name} harness: ${reason}]`, () => {});
    return;
  }
  it(
    title,
    async (ctx) => {
      const fx = new Fixture(harness, suite, ctx);
      try {
        await body(fx);
      } finally {
        await fx.cleanup();
      }
    },
    TEST_TIMEOUT_MS,
  );
}

/**
 * Registers, once per harness, the check that every opt-out in `harness.skip` names a test of
 * the suite, so a stale opt-out is noticed. Every sub-suite calls it; the check runs after
 * collection, so it sees every test registered in the file.
 */
export function optOutCheck(harness: ConformanceHarness): void {
  if (checked.has(harness)) return;
  checked.add(harness);
  describe("opt-outs", () => {
    it("every opt-out names a test of the suite and gives a reason", () => {
      const known = registry(harness);
      for (const [title, reason] of Object.entries(harness.skip ?? {})) {
        expect(known.has(title), `harness.skip names "${title}", which is no test of the suite`).toBe(true);
        expect(
          typeof reason === "string" && reason.trim() !== "",
          `the opt-out of "${title}" gives no reason`,
        ).toBe(true);
      }
    });
  });
}
