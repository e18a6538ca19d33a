/**
 * {@link runConformance}: every sub-suite for one driver, in one `describe`.
 *
 * @module
 */
import { afterAll, describe } from "vitest";
import { advisorySuite } from "./advisory.js";
import { batchSuite } from "./batch.js";
import { claimsSuite } from "./claims.js";
import { concurrencySuite } from "./concurrency.js";
import { connectionsSuite } from "./connections.js";
import { controlsSuite } from "./controls.js";
import { crashSuite } from "./crash.js";
import { declarationSuite } from "./declaration.js";
import { errorsSuite } from "./errors.js";
import { fifoSuite } from "./fifo.js";
import { handlerTimeoutSuite } from "./handler-timeout.js";
import type { ConformanceHarness } from "./harness.js";
import { identifiersSuite } from "./identifiers.js";
import { interleavingsSuite } from "./interleavings.js";
import { keyLimitsSuite } from "./key-limits.js";
import { leaseSuite } from "./lease.js";
import { lockingSuite } from "./locking.js";
import { memorySuite } from "./memory.js";
import { operationsSuite } from "./operations.js";
import { outcomesSuite } from "./outcomes.js";
import { payloadSuite } from "./payload.js";
import { poisonSuite } from "./poison.js";
import { poolsSuite } from "./pools.js";
import { prefetchSuite } from "./prefetch.js";
import { collectConformanceTests, optOutCheck } from "./registry.js";
import { retryDelaySuite } from "./retry-delay.js";
import { robustnessSuite } from "./robustness.js";
import { schedulesSuite } from "./schedules.js";
import { settlementsSuite } from "./settlements.js";
import { shutdownSuite } from "./shutdown.js";
import { startupSuite } from "./startup.js";
import { statusSuite } from "./status.js";
import { transactionalSuite } from "./transactional.js";
import { transactionsSuite } from "./transactions.js";
import { uniqueSuite } from "./unique.js";
import { wakeSuite } from "./wake.js";

/** Every sub-suite, by name, in the order {@link runConformance} registers them. */
export const conformanceSuites = Object.freeze({
  claims: claimsSuite,
  outcomes: outcomesSuite,
  locking: lockingSuite,
  lease: leaseSuite,
  advisory: advisorySuite,
  keyLimits: keyLimitsSuite,
  fifo: fifoSuite,
  interleavings: interleavingsSuite,
  batch: batchSuite,
  settlements: settlementsSuite,
  poison: poisonSuite,
  retryDelay: retryDelaySuite,
  handlerTimeout: handlerTimeoutSuite,
  prefetch: prefetchSuite,
  payload: payloadSuite,
  transactions: transactionsSuite,
  transactional: transactionalSuite,
  wake: wakeSuite,
  shutdown: shutdownSuite,
  startup: startupSuite,
  status: statusSuite,
  connections: connectionsSuite,
  pools: poolsSuite,
  concurrency: concurrencySuite,
  controls: controlsSuite,
  crash: crashSuite,
  declaration: declarationSuite,
  errors: errorsSuite,
  identifiers: identifiersSuite,
  robustness: robustnessSuite,
  schedules: schedulesSuite,
  memory: memorySuite,
  operations: operationsSuite,
  unique: uniqueSuite,
} satisfies Record<string, (harness: ConformanceHarness) => void>);

/** The name of one sub-suite in {@link conformanceSuites}. */
export type ConformanceSuiteName = keyof typeof conformanceSuites;

/** What {@link runConformance} registers. */
export interface ConformanceRunOptions {
  /**
   * Only these sub-suites (default: every one). The suite is long: a driver may split it over
   * test files, which its runner then runs side by side, each file with its own harness. The
   * opt-out check still knows every test of the suite (the other sub-suites' titles are
   * collected, not registered), so an opt-out naming a test of another file is no error.
   */
  readonly suites?: readonly ConformanceSuiteName[];
}

/**
 * Registers the whole conformance suite (or `options.suites`) for the driver `harness` describes,
 * inside a `describe("rowclaim conformance: <name>")`. Call it at the top of (or inside) a vitest test
 * file. Tests the driver's capabilities do not cover skip themselves with the reason; tests the
 * harness opts out of (`harness.skip`) show its reason; `harness.close()` runs after every test.
 *
 * @example
 * runConformance({
 *   name: "mydb",
 *   createDriver: () => createMyDriver(url),
 *   execute: (sql) => admin.exec(sql),
 *   readRows: (table) => admin.all(`SELECT * FROM "${table.name}" ORDER BY "${table.columns.id}"`),
 *   dropTable: (table) => admin.exec(`DROP TABLE IF EXISTS "${table.name}"`),
 * });
 */
export function runConformance(harness: ConformanceHarness, options: ConformanceRunOptions = {}): void {
  const names = Object.keys(conformanceSuites) as ConformanceSuiteName[];
  const chosen = new Set(options.suites ?? names);
  for (const name of chosen) {
    if (!Object.hasOwn(conformanceSuites, name))
      throw new TypeError(`@rowclaim/conformance: runConformance: no sub-suite is named "${String(name)}".`);
  }
  describe(`rowclaim conformance: ${harness.name}`, () => {
    optOutCheck(harness);
    for (const name of names) {
      if (chosen.has(name)) conformanceSuites[name](harness);
      else collectConformanceTests(harness, conformanceSuites[name]);
    }
    afterAll(async () => {
      await harness.close?.();
    });
  });
}
