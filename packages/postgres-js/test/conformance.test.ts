// Runs the shared conformance suite on the postgres.js driver, as packages/postgres does for pg:
// the whole suite, then the sub-suites where pool ownership matters on instances the harness owns.
import {
  advisorySuite,
  keyLimitsSuite,
  lockingSuite,
  runConformance,
  shutdownSuite,
} from "@rowclaim/conformance";
import { databaseUrl, loadStepOptOuts } from "@rowclaim/tooling/test-env";
import { afterAll, describe } from "vitest";
import { postgresJsHarness } from "./conformance-harness.js";

const url = await databaseUrl("postgres");
// Child processes of the crash tests inherit the environment and read the URL from it.
process.env.ROWCLAIM_POSTGRES_URL = url;

runConformance(postgresJsHarness({ url, name: "postgres-js", tablePrefix: "rcj_", skip: loadStepOptOuts() }));

describe("rowclaim conformance on instances the user owns: postgres-js", () => {
  const harness = postgresJsHarness({
    url,
    name: "postgres-js (user sql)",
    tablePrefix: "rcju_",
    pools: "user",
  });
  advisorySuite(harness);
  keyLimitsSuite(harness);
  shutdownSuite(harness);
  lockingSuite(harness);
  afterAll(async () => {
    await harness.close?.();
  });
});
