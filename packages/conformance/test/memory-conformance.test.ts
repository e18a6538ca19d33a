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

// Opted out while it is investigated: about one run in four, this test hangs until vitest's
// timeout on the memory driver (the row lock batch given up by close({ timeout: 100 })); whether
// core or the memory driver is at fault is not known yet. Every other shutdown test runs.
const skip = {
  "[rowLock] a settlement after close() gave the delivery up fails with CLOSED and changes nothing":
    "hangs intermittently on the memory driver (about one run in four), under investigation",
};

runConformance(memoryHarness({ name: "memory", skip }));

describe("rowclaim conformance on pools the user owns: memory", () => {
  const harness = memoryHarness({ name: "memory (user pool)", pools: "user", skip });
  advisorySuite(harness);
  shutdownSuite(harness);
  lockingSuite(harness);
  connectionsSuite(harness);
  afterAll(async () => {
    await harness.close?.();
  });
});
