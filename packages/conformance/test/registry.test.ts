import { defineDriver } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import type { ConformanceHarness } from "../src/harness.js";
import {
  collectConformanceTests,
  conformanceGroup,
  conformanceTest,
  optOutProblems,
  withLoggedCauses,
} from "../src/registry.js";

/** A harness that is never asked for a database: the tests below only collect and check names. */
function harnessWith(skip: Record<string, string>): ConformanceHarness {
  return {
    name: "meta",
    createDriver: () =>
      defineDriver({
        name: "meta",
        dialect: "meta",
        capabilities: { forms: ["lease"] },
        open: () => Promise.reject(new Error("not used")),
        publish: () => Promise.reject(new Error("not used")),
        schemaSql: () => "",
        close: async () => {},
      }),
    execute: async () => {},
    readRows: async () => [],
    dropTable: async () => {},
    skip,
  };
}

/** A sub-suite of two tests, the second skipping itself. */
function twoTests(harness: ConformanceHarness): void {
  conformanceGroup("meta", () => {
    conformanceTest(harness, "meta", "[meta] a test that passes", async () => {});
    conformanceTest(harness, "meta", "[meta] a test that skips itself", async (fx) => {
      fx.skip("nothing to check here");
    });
    conformanceTest(harness, "meta", "[meta] a test that fails after its broker logged", async (fx) => {
      fx.logger.error("a claim failed; trying again after the poll interval.", {
        error: new Error("could not determine data type of parameter $3"),
      });
      throw new Error("Timed out after 20000 ms waiting for the delivery.");
    });
  });
}

describe("the opt-out check fails a stale or reasonless opt-out", () => {
  it("reports an opt-out naming no test of the suite, and one without a reason", () => {
    const harness = harnessWith({
      "[meta] a test that passes": "",
      "[meta] a test renamed long ago": "it was flaky once",
    });
    collectConformanceTests(harness, twoTests);
    expect(optOutProblems(harness)).toEqual([
      'the opt-out of "[meta] a test that passes" gives no reason',
      'harness.skip names "[meta] a test renamed long ago", which is no test of the suite',
    ]);
  });

  it("reports nothing when every opt-out names a test and gives a reason", () => {
    const harness = harnessWith({ "[meta] a test that passes": "the meta driver cannot" });
    collectConformanceTests(harness, twoTests);
    expect(optOutProblems(harness)).toEqual([]);
  });
});

describe("collected tests run on their own and report how they ended", () => {
  it("a passing test resolves passed, a skipping one its reason, an opted-out one the harness's reason", async () => {
    const tests = collectConformanceTests(harnessWith({}), twoTests);
    expect(await tests.get("[meta] a test that passes")?.run()).toBe("passed");
    expect(await tests.get("[meta] a test that skips itself")?.run()).toEqual({
      skipped: "nothing to check here",
    });
    const optedOut = collectConformanceTests(
      harnessWith({ "[meta] a test that passes": "not today" }),
      twoTests,
    );
    expect(await optedOut.get("[meta] a test that passes")?.run()).toEqual({
      skipped: "opted out by the meta harness: not today",
    });
  });

  it("a failing test's message carries what its brokers logged", async () => {
    const tests = collectConformanceTests(harnessWith({}), twoTests);
    const failure = await tests
      .get("[meta] a test that fails after its broker logged")
      ?.run()
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain("Timed out after 20000 ms");
    expect((failure as Error).message).toContain("could not determine data type of parameter $3");
  });
});

describe("withLoggedCauses appends the log to a failure", () => {
  it("leaves an error alone when nothing was logged, and lists at most twelve entries", () => {
    const plain = new Error("plain");
    expect(withLoggedCauses(plain, [])).toBe(plain);
    const entries = Array.from({ length: 15 }, (_, n) => ({
      level: "warn" as const,
      message: `warning ${n}`,
      details: undefined,
    }));
    const message = (withLoggedCauses(new Error("failed"), entries) as Error).message;
    expect(message).toContain("warning 11");
    expect(message).not.toContain("warning 12");
    expect(message).toContain("and 3 more");
  });
});
