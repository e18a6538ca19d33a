/**
 * Helpers for the suite's meta-tests: the suite is a certificate only if a broken driver fails
 * it. A meta-test plants one deliberate defect in a driver (with {@link replacingMember},
 * {@link withOpen}, {@link withClaimerMethod}, or a ready-made one such as
 * {@link ignoringIsolation}), collects the sub-suite whose test must catch it with
 * {@link brokenDriverTests}, and expects that test to fail. The conformance package runs its
 * meta-tests on the in-memory reference driver; a driver package keeps those whose defect only
 * its server can show, with these same helpers.
 *
 * @example
 * const test = brokenDriverTests(myHarness({ wrap: ignoringIsolation }), transactionsSuite);
 * it("fails at isolation serializable", async () => {
 *   await expect(test('[rowLock] a row lock claim runs at the isolation "serializable" …').run()).rejects.toThrow();
 * });
 *
 * @module
 */
import { type Driver, defineTable, type TableDefinition } from "@rowclaim/core";
import type { Claimer, OpenOptions } from "@rowclaim/core/driver";
import { afterAll } from "vitest";
import type { ConformanceHarness } from "./harness.js";
import { type CollectedTest, collectConformanceTests } from "./registry.js";

/**
 * `target` with its member `property` replaced by `value`; every other member is the target's
 * own (methods bound to it, so that private fields still work).
 */
export function replacingMember<T extends object>(target: T, property: string | symbol, value: unknown): T {
  return new Proxy(target, {
    get(inner, name) {
      if (name === property) return value;
      const own: unknown = Reflect.get(inner, name, inner);
      return typeof own === "function" ? own.bind(inner) : own;
    },
  });
}

/** `driver` with its `open` replaced (every other member is the driver's own). */
export function withOpen(
  driver: Driver,
  open: (table: TableDefinition, options: OpenOptions) => Promise<Claimer>,
): Driver {
  return replacingMember(driver, "open", open);
}

/**
 * `driver` with one method of the claimers it opens in `form` replaced by what `replace` returns
 * for the claimer (claimers of other forms are the driver's own).
 */
export function withClaimerMethod<C extends Claimer>(
  driver: Driver,
  form: C["form"],
  method: string,
  replace: (claimer: C) => unknown,
): Driver {
  return withOpen(driver, async (table, options) => {
    const claimer = await driver.open(table, options);
    if (claimer.form !== form) return claimer;
    return replacingMember(claimer, method, replace(claimer as C));
  });
}

/** Broken: claims run at the database's default level, whatever isolation the table names. */
export function ignoringIsolation(driver: Driver): Driver {
  return withOpen(driver, (table, options) => {
    const { isolation: _ignored, ...description } = table.description;
    return driver.open(defineTable(description), options);
  });
}

/**
 * The tests `register` (a sub-suite, or several) registers for `harness`, collected to be run by
 * hand ({@link collectConformanceTests}); the harness is closed after the file's tests. Returns
 * a lookup by title that throws for a title the suite does not have (a renamed test fails the
 * meta-test instead of passing it). Call it while vitest collects (inside `describe`).
 */
export function brokenDriverTests(
  harness: ConformanceHarness,
  register: (harness: ConformanceHarness) => void,
): (title: string) => CollectedTest {
  const tests = collectConformanceTests(harness, register);
  afterAll(async () => {
    await harness.close?.();
  });
  return (title) => {
    const test = tests.get(title);
    if (test === undefined) throw new Error(`The suite has no test named "${title}".`);
    return test;
  };
}
