// Runs the shared conformance suite on the MySQL/MariaDB driver, exactly as a third-party driver
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
import { mysqlHarness } from "./conformance-harness.js";
import { mysqlUrl } from "./support.js";

const url = await mysqlUrl();
// Child processes (crash and multi-process tests) inherit the environment and read the URL from it.
process.env.ROWCLAIM_MYSQL_URL = url;

runConformance(mysqlHarness({ url, name: "mysql (MariaDB)", tablePrefix: "rc_", skip: loadStepOptOuts() }));

describe("rowclaim conformance on pools the user owns: mysql (MariaDB)", () => {
  const harness = mysqlHarness({
    url,
    name: "mysql (MariaDB, user pool)",
    tablePrefix: "rcu_",
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
