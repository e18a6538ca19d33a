// Core's runtimes on the in-memory reference driver, deterministically: what went together is
// counted from the driver's calls, and time is a clock the test sets, never measured.
import {
  ack,
  BrokerError,
  createBroker,
  type Delivery,
  defineTable,
  retryAfter,
  type TableDescription,
} from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  createManualClock,
  createMemoryDriver,
  executeSql,
  type MemoryCall,
  MemoryDatabase,
  type MemoryDriverOptions,
} from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";

const start = new Date("2030-01-01T00:00:00Z");

/** A table of `description` created on a new memory database, and a driver on it that records its calls. */
function setUp(description: TableDescription, options: MemoryDriverOptions = {}) {
  const table = defineTable(description);
  const database = new MemoryDatabase();
  const calls: MemoryCall[] = [];
  const clock = createManualClock(start);
  const driver = createMemoryDriver({ database, clock, onCall: (call) => calls.push(call), ...options });
  executeSql(database, driver.schemaSql(table));
  const count = (method: string): number => calls.filter((call) => call.method === method).length;
  return { table, database, clock, driver, count };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("a row lock batch", () => {
  it("settles each of its rows inside its transaction and ends with one commit", async () => {
    const { table, driver, count } = setUp(
      { name: "batch", columns: { id: "id", payload: "payload" } },
      { without: ["endBatchWithClaim"] },
    );
    const broker = createBroker({ driver });
    await broker.publishMany(table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await broker.subscribe(table, () => ack(), { workers: 3, batch: 3 });
    await drainTable(broker, table);
    await broker.close();
    expect({ settles: count("settle"), commits: count("commit"), rollbacks: count("rollback") }).toEqual({
      settles: 3,
      commits: 1,
      rollbacks: 0,
    });
  });
});

describe("the clock-skew check", () => {
  it("refuses a lease subscription with CLOCK_SKEW when the host's clock runs a lease ahead of the database's", async () => {
    const { table, driver, clock } = setUp({
      name: "skewed",
      columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
      lease: 30,
    });
    const host = createManualClock(start.getTime() + 30_000);
    const broker = createBroker({ driver, clock: host.asFunction });
    const error = await broker
      .subscribe(table, () => ack())
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(BrokerError.is(error, "CLOCK_SKEW")).toBe(true);
    // The same host clock agrees with a database clock moved to it.
    clock.set(host.now());
    const agreeing = createBroker({
      driver: createMemoryDriver({ database: driver.database, clock }),
      clock: host.asFunction,
    });
    await agreeing.subscribe(table, () => ack());
    await Promise.all([broker.close(), agreeing.close()]);
  });
});

describe("retryAfter", () => {
  it("makes the row due delay milliseconds after the handler's outcome, with the attempt counted", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(start);
    const { table, database, driver } = setUp({
      name: "retried",
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        runAt: "run_at",
        lockedUntil: "locked_until",
      },
      lease: 30,
    });
    const broker = createBroker({ driver, clockSkew: false });
    const seen: Delivery[] = [];
    await broker.subscribe(table, (delivery) => {
      seen.push(delivery);
      return retryAfter(5_000);
    });
    await broker.publish(table, "later");
    await waitFor("the retried row to be released", () => {
      const [row] = database.rows(table);
      return row?.locked_until === null && seen.length === 1;
    });
    const [row] = database.rows(table);
    expect(row?.run_at).toEqual(new Date(start.getTime() + 5_000));
    expect(row?.attempt).toBe(2);
    expect(seen).toHaveLength(1);
    await broker.close();
  });
});

describe("close() during a claim", () => {
  it("returns without sleeping out the poll interval when the claim in flight at the stop fails", async () => {
    const { table, driver } = setUp({
      name: "stop_during_claim",
      columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
    });
    let claimStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      claimStarted = resolve;
    });
    let failClaim!: () => void;
    const failing = new Promise<void>((resolve) => {
      failClaim = resolve;
    });
    // The first claim waits until the test has called close(), then fails.
    const gated = {
      ...driver,
      async open(...args: Parameters<typeof driver.open>) {
        const claimer = await driver.open(...args);
        let first = true;
        return new Proxy(claimer, {
          get(target, property, receiver) {
            if (property !== "claim" || !first) return Reflect.get(target, property, receiver);
            return async () => {
              first = false;
              claimStarted();
              await failing;
              throw new BrokerError("CONNECTION_LOST", "the claim failed");
            };
          },
        });
      },
    };
    const broker = createBroker({ driver: gated, clockSkew: false, logger: { error() {}, warn() {} } });
    await broker.subscribe(table, () => ack(), { pollInterval: 3_600_000 });
    await started;
    let closed = false;
    const closing = broker.close().then(() => {
      closed = true;
    });
    failClaim();
    await waitFor("close() to return", () => closed, { timeoutMs: 10_000 });
    await closing;
  });
});
