// The README's example of the in-memory reference driver: a database-free test of core that
// counts the driver's calls instead of timing them.
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { createManualClock, createMemoryDriver, executeSql, type MemoryCall } from "../src/memory/index.js";

/** Drains two published rows through a lease subscription; returns the settle calls and the rows left. */
export async function drainWithoutDatabase(): Promise<{ settles: number; left: number }> {
  // usage:start
  const jobs = defineTable({
    name: "jobs",
    columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
  });
  const calls: MemoryCall[] = [];
  const clock = createManualClock(new Date("2030-01-01T00:00:00Z"));
  // As a driver without the optional batched calls: each ack is one settle().
  const driver = createMemoryDriver({
    clock,
    onCall: (call) => calls.push(call),
    without: ["settleMany", "claimWithAcks"],
  });
  executeSql(driver.database, driver.schemaSql(jobs)); // the driver's own CREATE TABLE
  const broker = createBroker({ driver, clock: clock.asFunction });
  await broker.subscribe(jobs, () => ack());
  await broker.publishMany(jobs, [{ payload: 1 }, { payload: 2 }]);
  await drainTable(broker, jobs);
  const settles = calls.filter((call) => call.method === "settle").length; // one per ack
  const left = driver.database.rows(jobs).length; // 0: read behind the broker's back
  // usage:end
  await broker.close();
  return { settles, left };
}
