import { ack, createBroker, type Delivery, retry, silentLogger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { newDriver, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

const shapes = {
  rowLock: (name: string) => ({
    name,
    columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" },
  }),
  lease: (name: string) => ({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      priority: "priority",
      lockedUntil: "locked_until",
    },
    lease: 1,
  }),
  advisory: (name: string) => ({
    name,
    columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" },
    advisoryLock: `${name}-{id}`,
  }),
};

describe.each(Object.keys(shapes) as (keyof typeof shapes)[])(
  "the %s form delivers, retries and acks through the broker",
  (form) => {
    it("delivers published rows in claim order, counts a retry, and deletes on ack", async () => {
      const table = await db.tables.create(shapes[form](uniqueName(form)));
      const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
      try {
        const ids = await broker.publishMany(table, [
          { payload: { n: 1 }, priority: 1 },
          { payload: { n: 2 }, priority: 0 },
          { payload: "three", priority: 2 },
        ]);
        expect(ids).toHaveLength(3);
        const seen: { payload: unknown; attempt: number }[] = [];
        let retried = false;
        await broker.subscribe(
          table,
          async (delivery: Delivery) => {
            seen.push({ payload: delivery.payload, attempt: delivery.attempt });
            if (!retried && (delivery.payload as { n?: number }).n === 2) {
              retried = true;
              return retry();
            }
            return ack();
          },
          { pollInterval: 50 },
        );
        await waitFor(
          async () => (await readAll(db.admin, table)).length === 0,
          30_000,
          "the table to drain",
        );
        expect(seen.map((s) => s.payload)).toEqual([{ n: 2 }, { n: 2 }, { n: 1 }, "three"]);
        expect(seen.map((s) => s.attempt)).toEqual([1, 2, 1, 1]);
      } finally {
        await broker.close();
      }
    });
  },
);
