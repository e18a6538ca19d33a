// Runs the whole conformance suite on the in-memory reference driver, exactly as a driver's own
// test file does: on pools the driver makes and ends, then the sub-suites where pool ownership
// matters (advisory keys, shutdown, locking, connections) on pools the harness owns.
import { afterAll, describe } from "vitest";
import { advisorySuite } from "../src/advisory.js";
import { connectionsSuite } from "../src/connections.js";
import { lockingSuite } from "../src/locking.js";
import { runConformance } from "../src/run.js";
import { shutdownSuite } from "../src/shutdown.js";
import { memoryHarness } from "./memory-harness.js";

runConformance(memoryHarness({ name: "memory" }));

describe("rowclaim conformance on pools the user owns: memory", () => {
  const harness = memoryHarness({ name: "memory (user pool)", pools: "user" });
  advisorySuite(harness);
  shutdownSuite(harness);
  lockingSuite(harness);
  connectionsSuite(harness);
  afterAll(async () => {
    await harness.close?.();
  });
});
