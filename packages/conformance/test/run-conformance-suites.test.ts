// runConformance with `suites`: a driver splits the long suite over test files that its runner
// runs side by side. Only the chosen sub-suites' tests are registered; the opt-out check still
// knows every test of the suite, so an opt-out naming a test of another file is no error.
import type { RunnerTask } from "vitest";
import { describe, expect, it } from "vitest";
import { optOutProblems, registeredTests } from "../src/registry.js";
import { runConformance } from "../src/run.js";
import { memoryHarness } from "./memory-harness.js";

const leaseTest = "[lease] a lease claim counts the attempt and commits at once";
const claimsTest = "[lease] the first delivery reads attempt 1";
const harness = memoryHarness({
  name: "memory (claims only)",
  skip: { [leaseTest]: "run by another file in a split suite" },
});

runConformance(harness, { suites: ["claims"] });

/** The titles of the tests under `task`, at any depth. */
function testTitles(task: RunnerTask): string[] {
  if (task.type === "test") return [task.name];
  return task.type === "suite" ? task.tasks.flatMap(testTitles) : [];
}

describe("runConformance with suites", () => {
  it("registers the chosen sub-suites' tests only", ({ task }) => {
    const suite = task.file.tasks.find((child) => child.name === `rowclaim conformance: ${harness.name}`);
    expect(suite).toBeDefined();
    const titles = suite === undefined ? [] : testTitles(suite);
    expect(titles).toContain(claimsTest);
    expect(titles.filter((title) => title.startsWith(leaseTest))).toEqual([]);
  });

  it("knows every test of the suite for the opt-out check: an opt-out of another sub-suite's test is no problem", () => {
    expect(registeredTests(harness)).toContain(leaseTest);
    expect(optOutProblems(harness)).toEqual([]);
  });

  it("refuses a sub-suite name it does not know, with a TypeError naming it", () => {
    expect(() => runConformance(harness, { suites: ["claim" as "claims"] })).toThrow(
      /no sub-suite is named "claim"/,
    );
  });
});
