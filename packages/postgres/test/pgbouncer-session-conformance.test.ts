// The whole conformance suite through PgBouncer in session mode (tooling/pgbouncer.sh), with the
// same harness as the direct run (every optional hook), on driver-owned pools and then, where
// pool ownership matters, on pools the harness owns.
import { advisorySuite, lockingSuite, runConformance, shutdownSuite } from "@rowclaim/conformance";
import { afterAll, describe } from "vitest";
import { postgresHarness } from "./conformance-harness.js";
import { pgbouncerUrls } from "./pgbouncer-env.js";

const url = pgbouncerUrls().session;
// Child processes of the crash tests inherit the environment and read the URL from it.
process.env.ROWCLAIM_POSTGRES_URL = url;

// claimIsolation() finds the driver's session that holds a row lock by its backend pid; behind
// PgBouncer a client sees PgBouncer's own cancel key, never the server's pid, so that hook cannot
// work here. The direct run covers the isolation a claim runs at; PgBouncer in session mode
// passes the session, and its SET TRANSACTION, through unchanged.
const isolationReason =
  "behind PgBouncer the harness cannot map a server pid to the driver's client (PgBouncer hands out its own cancel keys); the direct run reads the level";
const skip = Object.fromEntries(
  (["read uncommitted", "read committed", "repeatable read", "serializable"] as const).map((level) => [
    `[rowLock] a row lock claim runs at the isolation "${level}" its table names, read from the server while the handler runs`,
    isolationReason,
  ]),
);

runConformance(
  postgresHarness({ url, name: "postgres via PgBouncer (session mode)", tablePrefix: "rcb_", skip }),
);

describe("rowclaim conformance on pools the user owns: postgres via PgBouncer (session mode)", () => {
  const harness = postgresHarness({
    url,
    name: "postgres via PgBouncer (session mode, user pool)",
    tablePrefix: "rcbu_",
    pools: "user",
  });
  advisorySuite(harness);
  shutdownSuite(harness);
  lockingSuite(harness);
  afterAll(async () => {
    await harness.close?.();
  });
});
