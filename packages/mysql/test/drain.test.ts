import { ack, createBroker, type Delivery, silentLogger, type TableDescription } from "@rowclaim/core";
import { inLoadStep } from "@rowclaim/tooling/test-env";
import { describe, expect, it } from "vitest";
import { newDriver, quote, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

/** 2,000 rows; 5,000 in the load step (ROWCLAIM_LOAD=1). */
const rows = inLoadStep ? 5000 : 2000;

function describeForm(form: "rowLock" | "lease" | "advisory", name: string): TableDescription {
  const columns = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" };
  if (form === "lease") return { name, columns: { ...columns, lockedUntil: "locked_until" }, lease: 30 };
  if (form === "advisory") return { name, columns, advisoryLock: `${name}-{id}` };
  return { name, columns };
}

describe.each(["rowLock", "lease", "advisory"] as const)(
  `4 brokers × 4 workers drain ${rows.toLocaleString("en-US")} rows in the %s form`,
  (form) => {
    it("every row is acked exactly once", { timeout: 300_000 }, async () => {
      const table = await db.tables.create(describeForm(form, uniqueName(`drain_${form}`)));
      const brokers = await Promise.all(
        [1, 2, 3, 4].map(async () => createBroker({ driver: await newDriver(8), logger: silentLogger })),
      );
      try {
        const ids: unknown[] = [];
        for (let start = 0; start < rows; start += 500) {
          ids.push(
            ...((await brokers[0]?.publishMany(
              table,
              Array.from({ length: 500 }, (_, n) => ({ payload: start + n })),
            )) ?? []),
          );
        }
        expect(new Set(ids.map(String)).size).toBe(rows);
        const acks = new Map<string, number>();
        const handler = (delivery: Delivery) => {
          const key = String(delivery.id);
          acks.set(key, (acks.get(key) ?? 0) + 1);
          return ack();
        };
        for (const broker of brokers)
          await broker.subscribe(table, handler, { workers: 4, pollInterval: 50 });
        const remaining = async () => {
          const [result] = await db.admin.query(`SELECT COUNT(*) AS n FROM ${quote(table.name)}`);
          return Number((result as { n: number }[])[0]?.n);
        };
        await waitFor(
          async () => (await remaining()) === 0 && acks.size === rows,
          240_000,
          "the table to drain",
        );
        await Promise.all(brokers.map((broker) => broker.close()));
        expect(acks.size).toBe(rows);
        expect([...acks.values()].every((count) => count === 1)).toBe(true);
        expect(new Set(ids.map(String))).toEqual(new Set(acks.keys()));
      } finally {
        await Promise.all(brokers.map((broker) => broker.close()));
      }
    });
  },
);
