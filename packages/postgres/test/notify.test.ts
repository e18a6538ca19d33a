import { createBroker, type Delivery, silentLogger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

async function listenerPids(app: string, channel: string): Promise<number[]> {
  const rows = await db.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query = $2", [
    app,
    `LISTEN "${channel}"`,
  ]);
  return rows.map((row) => Number(row.pid));
}

describe("LISTEN/NOTIFY wake-up (notify: true)", () => {
  it("a publish through another driver wakes a subscription with a long poll interval, also after its listener was cut", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_notify")));
    const app = uniqueName("rc_listen");
    const listening = db.driver({ notify: true, applicationName: app });
    const publishing = db.driver({ notify: true });
    expect(listening.capabilities.crossProcessWake).toBe(true);
    const broker = createBroker({ driver: listening, logger: silentLogger });
    const seen: Delivery[] = [];
    await broker.subscribe(
      table,
      (delivery) => {
        seen.push(delivery);
      },
      { pollInterval: 600_000 },
    );
    const channel = listening.channelFor(table);
    await waitFor(async () => (await listenerPids(app, channel)).length === 1, { what: "the listener" });
    // Publishing through the driver itself skips the broker's in-process wake: only NOTIFY can wake it.
    const row = { payload: "1", group: null, runAt: new Date(), priority: null, headers: null, values: {} };
    await publishing.publish(table, [row], {});
    await waitFor(() => seen.length === 1, { timeout: 20_000, what: "the NOTIFY wake" });

    const [pid] = await listenerPids(app, channel);
    await db.query("SELECT pg_terminate_backend($1)", [pid]);
    await waitFor(
      async () => {
        const pids = await listenerPids(app, channel);
        return pids.length === 1 && pids[0] !== pid;
      },
      { what: "the listener to reconnect" },
    );
    await publishing.publish(table, [{ ...row, payload: "2" }], {});
    await waitFor(() => seen.length === 2, { timeout: 20_000, what: "the wake after reconnecting" });
    expect(seen.map((d) => d.payload)).toEqual([1, 2]);
    await broker.close();
    await publishing.close();
    await waitFor(async () => (await listenerPids(app, channel)).length === 0, {
      what: "the listener to close",
    });
  });

  it("a driver without notify offers no cross-process wake and sends no NOTIFY", async () => {
    const driver = db.driver();
    expect(driver.capabilities.crossProcessWake).toBe(false);
    expect(driver.listen).toBeUndefined();
    await driver.close();
  });
});
