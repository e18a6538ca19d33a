// The conformance sub-suites that a pooler in session mode can change, through PgBouncer
// (tooling/pgbouncer.sh), with the same harness as the direct run (every optional hook), on
// driver-owned pools and then, where pool ownership matters, on pools the harness owns.
//
// PgBouncer in session mode hands one server session to one client for the client's whole
// connection: what it can change is how sessions are made, found, held and lost — claims and
// their locks, leases, advisory keys and their slots, transactions, LISTEN, shutdown, pools,
// crashes, errors, and what status, pauses and operations read of sessions and locks. The
// sub-suites about what the driver's SQL and the runtime do inside a session (outcomes, payloads,
// coalesced settlements, prefetch, interleavings, poison, declarations, identifiers, unique keys,
// schedules) and the process's own heap (memory) say the same through the pooler as on the
// direct run, which has them all; the start-up faults (sessions ended before each start-up statement) run there too,
// and pgbouncer.test.ts covers the probes behind both pool modes.
import {
  advisorySuite,
  type ConformanceHarness,
  conformanceSuites,
  lockingSuite,
  optOutCheck,
  shutdownSuite,
} from "@rowclaim/conformance";
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

/** The sub-suites run through the pooler (keys of `conformanceSuites`). */
const throughThePooler = [
  "claims",
  "locking",
  "lease",
  "advisory",
  "keyLimits",
  "fifo",
  "transactions",
  "transactional",
  "wake",
  "shutdown",
  "connections",
  "pools",
  "concurrency",
  "crash",
  "errors",
  "robustness",
  "status",
  "controls",
  "operations",
] as const satisfies readonly (keyof typeof conformanceSuites)[];

describe("rowclaim conformance: postgres via PgBouncer (session mode)", () => {
  const harness: ConformanceHarness = postgresHarness({
    url,
    name: "postgres via PgBouncer (session mode)",
    tablePrefix: "rcb_",
    skip,
  });
  optOutCheck(harness);
  for (const name of throughThePooler) conformanceSuites[name](harness);
  afterAll(async () => {
    await harness.close?.();
  });
});

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
