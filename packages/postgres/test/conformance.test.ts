// Runs the shared conformance suite on the PostgreSQL driver, exactly as a third-party driver
// would: the whole suite on pools the driver makes and ends, then the sub-suites where pool
// ownership matters (advisory keys, shutdown, locking) on pools the harness owns, as a user
// passing `{ pool }` does, so that a connection or a key a driver leaves behind is seen.
import {
  advisorySuite,
  keyLimitsSuite,
  lockingSuite,
  runConformance,
  shutdownSuite,
} from "@rowclaim/conformance";
import { loadStepOptOuts } from "@rowclaim/tooling/test-env";
import { afterAll, describe } from "vitest";
import { postgresHarness } from "./conformance-harness.js";
import { testUrl } from "./helpers.js";

const url = await testUrl();
// Child processes of the crash tests inherit the environment and read the URL from it.
process.env.ROWCLAIM_POSTGRES_URL = url;

runConformance(postgresHarness({ url, name: "postgres", tablePrefix: "rc_", skip: loadStepOptOuts() }));

describe("rowclaim conformance on pools the user owns: postgres", () => {
  const harness = postgresHarness({ url, name: "postgres (user pool)", tablePrefix: "rcu_", pools: "user" });
  advisorySuite(harness);
  keyLimitsSuite(harness);
  shutdownSuite(harness);
  lockingSuite(harness);
  afterAll(async () => {
    await harness.close?.();
  });
});
