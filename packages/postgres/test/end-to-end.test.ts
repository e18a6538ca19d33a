import { ack, createBroker, type Delivery, retry, silentLogger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

describe.each(["rowLock", "lease", "advisory"] as const)("the %s form end to end", (form) => {
  it("delivers published rows once each in claim order, first attempt 1, and acks delete them", async () => {
    const table = await db.create(describeTable(form, uniqueName(`rc_e2e_${form}`)));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const seen: Delivery[] = [];
    const values = (account: string) => (form === "advisory" ? { values: { account } } : {});
    await broker.publishMany(table, [
      { payload: { n: 1 }, priority: 1, ...values("a") },
      { payload: { n: 2 }, ...values("b") },
      { payload: "three", runAt: new Date(Date.now() - 60_000), ...values("c") },
    ]);
    await broker.subscribe(table, (delivery) => {
      seen.push(delivery);
      return ack();
    });
    await waitFor(() => seen.length === 3, { what: "three deliveries" });
    // Claim order: priority, then runAt (the third row is due earliest), then id.
    expect(seen.map((d) => d.payload)).toEqual(["three", { n: 2 }, { n: 1 }]);
    expect(seen.map((d) => d.attempt)).toEqual([1, 1, 1]);
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "rows deleted" });
    await broker.close();
  });

  it("a retried row comes back with its attempt counted", async () => {
    const table = await db.create(describeTable(form, uniqueName(`rc_e2e_retry_${form}`)));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const attempts: number[] = [];
    await broker.publish(table, { x: 1 }, form === "advisory" ? { values: { account: "a" } } : {});
    await broker.subscribe(table, (delivery) => {
      attempts.push(delivery.attempt);
      return delivery.attempt < 3 ? retry() : ack();
    });
    await waitFor(() => attempts.length === 3, { what: "three attempts" });
    expect(attempts).toEqual([1, 2, 3]);
    await broker.close();
  });
});
