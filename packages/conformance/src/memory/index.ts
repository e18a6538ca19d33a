/**
 * `@rowclaim/conformance/memory`: the in-memory reference driver. It implements core's driver
 * contract (every form, token and key fences, FIFO groups, advisory keys, attempts and dead
 * letters) on tables kept in the process, with an injectable clock and round trip, so that
 * core's own logic, and what a driver author expects core to ask of a driver, can be tested
 * deterministically and without a database. It passes the conformance suite itself. It is
 * never a stand-in for a test on a real database.
 *
 * @example
 * import { createBroker, defineTable, ack } from "@rowclaim/core";
 * import { createMemoryDriver, executeSql } from "@rowclaim/conformance/memory";
 *
 * const driver = createMemoryDriver();
 * const jobs = defineTable({ name: "jobs", columns: { id: "id", payload: "payload", lockedUntil: "locked_until" } });
 * executeSql(driver.database, driver.schemaSql(jobs));
 * const broker = createBroker({ driver });
 * await broker.subscribe(jobs, () => ack());
 * await broker.publish(jobs, { hello: "world" });
 *
 * @module
 */
export { MemoryAdvisoryClaimer, type MemoryAdvisoryToken } from "./advisory.js";
export { createManualClock, type ManualClock, type MemoryClock, systemClock } from "./clock.js";
export type { MemoryCall } from "./context.js";
export {
  createMemoryDriver,
  type MemoryDriver,
  type MemoryDriverOptions,
  memoryCapabilities,
} from "./driver.js";
export { MemoryLeaseClaimer, type MemoryLeaseToken } from "./lease.js";
export type { MemoryOptionalMethod } from "./optional.js";
export { MemoryConnection, MemoryPool } from "./pool.js";
export {
  DEFAULT_ISOLATION,
  MemoryRowLockClaimer,
  type MemoryRowLockToken,
  MemoryTransaction,
} from "./row-lock.js";
export { memoryLedgerSchemaSql } from "./schedule-ledger.js";
export { quoteIdentifier, schemaSql } from "./schema.js";
export { executeSql } from "./statements.js";
export {
  type HeldMemoryLock,
  type MemoryColumn,
  MemoryDatabase,
  type MemoryRow,
  MemoryTable,
} from "./store.js";
export { MemoryTransactionClient } from "./transaction-client.js";
