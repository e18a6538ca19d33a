// What run-time controls cost a claim, counted from the memory driver's calls with a clock the
// test holds still: the pause state is read once per poll interval, not per claim; a rate limit
// adds one take per claim. And how a driver without controls refuses them.
import { createBroker, type Driver, defineTable, type TableDescription } from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { describe, expect, it } from "vitest";
import {
  createManualClock,
  createMemoryDriver,
  executeSql,
  type MemoryCall,
  MemoryDatabase,
} from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";

const description: TableDescription = {
  name: "jobs",
  columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
  lease: 30,
};

function setUp() {
  const table = defineTable(description);
  const database = new MemoryDatabase();
  const calls: MemoryCall[] = [];
  const clock = createManualClock(new Date("2030-01-01T00:00:00Z"));
  const driver = createMemoryDriver({ database, clock, onCall: (call) => calls.push(call) });
  executeSql(database, driver.schemaSql(table));
  const count = (method: string): number => calls.filter((call) => call.method === method).length;
  // Claims, whether or not they carried acks.
  const claims = (): number => count("claim") + count("claimWithAcks");
  const broker = createBroker({ driver, clock: () => clock.now() });
  return { table, driver, clock, count, claims, broker };
}

describe("the claim cost of run-time controls", () => {
  it("reads the pause state once per poll interval, however many claims run in it", async () => {
    const { table, count, claims, broker, clock } = setUp();
    await broker.publishMany(
      table,
      Array.from({ length: 20 }, (_, n) => ({ payload: n })),
    );
    await broker.subscribe(table, () => undefined, { batch: 1, pollInterval: 1000 });
    await drainTable(broker, table);
    expect(claims()).toBeGreaterThanOrEqual(20);
    expect(count("controls.read")).toBe(1);
    clock.advance(1000);
    await broker.publish(table, 20);
    await drainTable(broker, table);
    expect(count("controls.read")).toBe(2);
    expect(count("controls.takeRate")).toBe(0);
    await broker.close();
  });

  it("with a rate limit, takes from the window once per claim and gives back what a claim did not use", async () => {
    const { table, count, claims, broker } = setUp();
    await broker.publishMany(
      table,
      Array.from({ length: 10 }, (_, n) => ({ payload: n })),
    );
    await broker.subscribe(table, () => undefined, {
      batch: 1,
      pollInterval: 1000,
      rateLimit: { limit: 1000, intervalMs: 60_000 },
    });
    await drainTable(broker, table);
    expect(count("controls.takeRate")).toBe(claims());
    // Every claim that found fewer rows than it was given (at least the last, which found none).
    expect(count("controls.returnRate")).toBeGreaterThanOrEqual(1);
    expect(count("controls.returnRate")).toBeLessThan(claims());
    await broker.close();
  });

  it("a pause and a resume in this process reach its subscriptions at once, whatever the poll interval", async () => {
    const { table, broker } = setUp();
    let handled = 0;
    await broker.subscribe(
      table,
      () => {
        handled += 1;
      },
      { pollInterval: 60_000 },
    );
    await broker.pause(table);
    await broker.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
    expect((await broker.controlState(table)).paused).toBe(true);
    await broker.resume(table);
    await waitFor("both rows to be handled after the resume", () => handled === 2);
    await broker.close();
  });
});

describe("a driver without run-time controls", () => {
  function withoutControls(): {
    driver: Driver;
    table: ReturnType<typeof defineTable>;
    opened: () => number;
  } {
    const table = defineTable(description);
    const database = new MemoryDatabase();
    const calls: MemoryCall[] = [];
    const memory = createMemoryDriver({ database, onCall: (call) => calls.push(call) });
    executeSql(database, memory.schemaSql(table));
    const { controls: _controls, ...rest } = memory;
    const driver: Driver = { ...rest, capabilities: { ...memory.capabilities, controls: false } };
    return { driver, table, opened: () => calls.filter((call) => call.method === "open").length };
  }

  it("refuses pause, resume, controlState and rateLimit with UNSUPPORTED_CONTROL, opening nothing", async () => {
    const { driver, table, opened } = withoutControls();
    const broker = createBroker({ driver });
    await expect(broker.pause(table)).rejects.toMatchObject({ code: "UNSUPPORTED_CONTROL" });
    await expect(broker.resume(table)).rejects.toMatchObject({ code: "UNSUPPORTED_CONTROL" });
    await expect(broker.controlState(table)).rejects.toMatchObject({ code: "UNSUPPORTED_CONTROL" });
    await expect(
      broker.subscribe(table, () => undefined, { rateLimit: { limit: 5, intervalMs: 1000 } }),
    ).rejects.toMatchObject({ code: "UNSUPPORTED_CONTROL" });
    expect(opened()).toBe(0);
    await broker.subscribe(table, () => undefined);
    expect(broker.subscriptions).toHaveLength(1);
    await broker.close();
  });
});
