import { type Broker, createBroker, silentLogger } from "@rowclaim/core";
import { inLoadStep } from "@rowclaim/tooling/test-env";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

/** 2,000 rows; 5,000 in the load step (ROWCLAIM_LOAD=1). */
const ROWS = inLoadStep ? 5000 : 2000;
const BROKERS = 4;
const WORKERS = 4;

describe(`four brokers with four workers each drain ${ROWS.toLocaleString("en-US")} rows`, () => {
  it.each(["rowLock", "lease", "advisory"] as const)(
    "in the %s form, acking every row exactly once",
    async (form) => {
      const table = await db.create(
        describeTable(form, uniqueName(`rc_drain_${form}`), form === "lease" ? { lease: 30 } : {}),
      );
      const brokers: Broker[] = Array.from({ length: BROKERS }, () =>
        createBroker({ driver: db.driver({ max: WORKERS + 2 }), logger: silentLogger }),
      );
      const messages = Array.from({ length: ROWS }, (_, n) => ({
        payload: n,
        ...(form === "advisory" ? { values: { account: `acc${n % 97}` } } : {}),
      }));
      await brokers[0]?.publishMany(table, messages);
      const handled = new Map<number, number>();
      let settleErrors = 0;
      const subscriptions = await Promise.all(
        brokers.map((broker) =>
          broker.subscribe<number>(
            table,
            (delivery) => {
              handled.set(delivery.payload, (handled.get(delivery.payload) ?? 0) + 1);
            },
            { workers: WORKERS, batch: form === "advisory" ? 1 : 4, pollInterval: 50 },
          ),
        ),
      );
      await waitFor(async () => handled.size === ROWS && (await db.rows(table)).length === 0, {
        timeout: 120_000,
        interval: 200,
        what: "every row to be acked",
      });
      for (const subscription of subscriptions) settleErrors += subscription.stats.settleErrors;
      await Promise.all(brokers.map((broker) => broker.close()));
      expect(settleErrors).toBe(0);
      expect([...handled.values()].every((count) => count === 1)).toBe(true);
      expect(subscriptions.reduce((sum, subscription) => sum + subscription.stats.acked, 0)).toBe(ROWS);
    },
    180_000,
  );
});
