// Core's retry delays and due-time wake on the in-memory reference driver, deterministically:
// the broker's clock is a manual clock the test moves, the poll interval is an hour, and nothing
// publishes, so a second delivery can only come from the wake at the due time the broker wrote.
import {
  ack,
  createBroker,
  type Delivery,
  defineTable,
  retryAfter,
  type TableDescription,
} from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { createManualClock, createMemoryDriver, executeSql, MemoryDatabase } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";

const start = new Date("2030-01-01T00:00:00.250Z");
const HOUR = 3_600_000;

function setUp(description: TableDescription) {
  const table = defineTable(description);
  const database = new MemoryDatabase();
  const clock = createManualClock(start);
  const driver = createMemoryDriver({ database, clock });
  executeSql(database, driver.schemaSql(table));
  const broker = createBroker({ driver, clock: clock.asFunction, clockSkew: false });
  return { table, database, clock, broker };
}

describe("a retry with runAt wakes its subscription at the due time it wrote", () => {
  it("claims the row again once the broker's clock reaches runAt, with an hour's poll interval", async () => {
    const { table, database, clock, broker } = setUp({
      name: "due",
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        runAt: "run_at",
        lockedUntil: "locked_until",
      },
    });
    const seen: Delivery[] = [];
    await broker.publish(table, "later");
    const subscription = await broker.subscribe(
      table,
      (delivery) => {
        seen.push(delivery);
        return delivery.attempt === 1 ? retryAfter(200) : ack();
      },
      { pollInterval: HOUR, listen: false },
    );
    await waitFor("the first delivery retried", () => subscription.stats.retried === 1);
    expect(database.rows(table)[0]?.run_at).toEqual(new Date(start.getTime() + 200));
    clock.advance(200);
    await waitFor("the second delivery", () => seen.length === 2);
    await waitFor("the row acked", () => database.rows(table).length === 0);
    expect(seen.map((delivery) => delivery.attempt)).toEqual([1, 2]);
    await broker.close();
  });
});

describe("a retry without runAt", () => {
  it("lease form: moves the lease to the due time, rounded up to a whole second, and lets the row go", async () => {
    const { table, database, clock, broker } = setUp({
      name: "leased",
      columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
      lease: 30,
    });
    const seen: Delivery[] = [];
    await broker.publish(table, "fails once");
    const subscription = await broker.subscribe(
      table,
      (delivery) => {
        seen.push(delivery);
        if (delivery.attempt === 1) throw new Error("first attempt fails");
        return ack();
      },
      { pollInterval: HOUR, listen: false, backoff: { baseMs: 1500 } },
    );
    await waitFor("the failed delivery retried", () => subscription.stats.retried === 1);
    // 00:00:00.250 + 1.5 s = 00:00:01.750, rounded up.
    expect(database.rows(table)[0]?.locked_until).toEqual(new Date("2030-01-01T00:00:02.000Z"));
    expect(subscription.held).toBe(0);
    clock.advance(1751);
    await waitFor("the second delivery", () => seen.length === 2);
    await waitFor("the row acked", () => database.rows(table).length === 0);
    expect(seen.map((delivery) => delivery.attempt)).toEqual([1, 2]);
    await broker.close();
  });

  it("row lock form: holds the row, with its worker, until the due time, then releases it", async () => {
    const { table, database, clock, broker } = setUp({
      name: "held",
      columns: { id: "id", payload: "payload", attempt: "attempt" },
    });
    const seen: Delivery[] = [];
    await broker.publishMany(table, [{ payload: "fails once" }, { payload: "fine" }]);
    const subscription = await broker.subscribe(
      table,
      (delivery) => {
        seen.push(delivery);
        if (delivery.payload === "fails once" && delivery.attempt === 1)
          throw new Error("first attempt fails");
        return ack();
      },
      { workers: 2, pollInterval: HOUR, listen: false, backoff: { baseMs: 1000 } },
    );
    // The held row keeps its worker: the other worker handles the other row meanwhile.
    await waitFor(
      "the other row acked while the failed one is held",
      () => database.rows(table).length === 1,
    );
    expect(subscription.held).toBe(1);
    expect(subscription.stats.retried).toBe(0);
    clock.advance(1000);
    await waitFor("the held row released and handled again", () => database.rows(table).length === 0);
    expect(seen.map((delivery) => [delivery.payload, delivery.attempt])).toEqual([
      ["fails once", 1],
      ["fine", 1],
      ["fails once", 2],
    ]);
    expect(subscription.stats.retried).toBe(1);
    await broker.close();
  });

  it("row lock form: a row held for its delay is released at once when the subscription stops", async () => {
    const { table, database, broker } = setUp({
      name: "stopped",
      columns: { id: "id", payload: "payload", attempt: "attempt" },
    });
    await broker.publish(table, "fails");
    const subscription = await broker.subscribe(
      table,
      () => {
        throw new Error("fails");
      },
      { pollInterval: HOUR, listen: false, backoff: { baseMs: HOUR } },
    );
    await waitFor("the failed row held", () => subscription.stats.failed === 1 && subscription.held === 1);
    await subscription.stop();
    expect(subscription.stats.retried).toBe(1);
    expect(database.rows(table)[0]?.attempt).toBe(2);
    await broker.close();
  });
});
