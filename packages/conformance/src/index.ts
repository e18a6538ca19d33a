/**
 * `@rowclaim/conformance`: the behavioural suite every rowclaim driver runs. A driver's test
 * file calls {@link runConformance} with a {@link ConformanceHarness}; each sub-suite is also
 * exported on its own.
 *
 * @packageDocumentation
 */
export { advisorySuite } from "./advisory.js";
export { batchSuite } from "./batch.js";
export {
  brokenDriverTests,
  ignoringIsolation,
  replacingMember,
  withClaimerMethod,
  withOpen,
} from "./broken.js";
export type { ChildConfig, ChildEvent } from "./child-protocol.js";
export { claimsSuite } from "./claims.js";
export { concurrencySuite } from "./concurrency.js";
export { connectionsSuite } from "./connections.js";
export { controlsSuite } from "./controls.js";
export { crashSuite } from "./crash.js";
export { declarationSuite } from "./declaration.js";
export { errorsSuite } from "./errors.js";
export { fifoSuite } from "./fifo.js";
export { handlerTimeoutSuite } from "./handler-timeout.js";
export type {
  ConformanceHarness,
  HeldRowLock,
  ObservedStatement,
  OlderServer,
  ServerAddress,
  SessionFault,
  SessionFaultDriver,
  SizedPoolDriver,
  StatementObserver,
  UserPoolDriver,
} from "./harness.js";
export { identifiersSuite } from "./identifiers.js";
export { interleavingsSuite } from "./interleavings.js";
export { keyLimitsSuite } from "./key-limits.js";
export { leaseSuite } from "./lease.js";
export { lockingSuite } from "./locking.js";
export { DEFAULT_MEMORY_ROWS, HEAP_GROWTH_BOUND, memorySuite } from "./memory.js";
export { operationsSuite } from "./operations.js";
export { outcomesSuite } from "./outcomes.js";
export { payloadSuite } from "./payload.js";
export { poisonSuite } from "./poison.js";
export { poolsSuite } from "./pools.js";
export { prefetchSuite } from "./prefetch.js";
export { RefusingProxy } from "./refusing-proxy.js";
export {
  type CollectedTest,
  type ConformanceTestOptions,
  collectConformanceTests,
  optOutCheck,
  optOutProblems,
  registeredTests,
  withLoggedCauses,
} from "./registry.js";
export { retryDelaySuite } from "./retry-delay.js";
export { robustnessSuite } from "./robustness.js";
export {
  type ConformanceRunOptions,
  type ConformanceSuiteName,
  conformanceSuites,
  runConformance,
} from "./run.js";
export type { FastClock, ScheduleChildConfig } from "./schedule-support.js";
export { schedulesSuite } from "./schedules.js";
export { settlementsSuite } from "./settlements.js";
export { shutdownSuite } from "./shutdown.js";
export { startupSuite } from "./startup.js";
export { statusSuite } from "./status.js";
export { transactionalSuite } from "./transactional.js";
export type { TransactionalChildConfig, TransactionalDriverModule } from "./transactional-support.js";
export { transactionsSuite } from "./transactions.js";
export { uniqueSuite } from "./unique.js";
export { wakeSuite } from "./wake.js";
