import { createBroker, type Delivery, retry, silentLogger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { newDriver, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

const hostile = {
  id: "i`d",
  payload: "pay load",
  attempt: "att'empt",
  runAt: 'run"at',
  priority: "prio`; DROP TABLE x; --",
  group: "group",
  processedAt: "select",
  headers: "he\\aders",
};

describe.each(["rowLock", "lease", "advisory"] as const)(
  "hostile identifiers work in the %s form",
  (form) => {
    it("a table and columns named with quotes, spaces, keywords and SQL publish, claim, retry and settle", async () => {
      const name = `${uniqueName(form)} ta\`b'le; --`;
      const table = await db.tables.create({
        name,
        columns: { ...hostile, ...(form === "lease" ? { lockedUntil: "locked`until" } : {}) },
        extraColumns: ["acc`ount"],
        ...(form === "advisory" ? { advisoryLock: `${name}-{acc\`ount}-{i\`d}` } : {}),
      });
      const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
      try {
        await broker.publishMany(table, [
          { payload: "a", group: "g'1", priority: 2, values: { "acc`ount": "x'y" }, headers: { k: "v" } },
          { payload: "b", group: "g'1", priority: 1, values: { "acc`ount": null } },
        ]);
        const seen: unknown[] = [];
        let retried = false;
        await broker.subscribe(
          table,
          (delivery: Delivery) => {
            seen.push(delivery.payload);
            if (!retried) {
              retried = true;
              return retry();
            }
          },
          { group: "g'1", pollInterval: 30 },
        );
        await waitFor(() => seen.length === 3, 20_000, "three deliveries");
        expect(seen).toEqual(["b", "b", "a"]);
        await waitFor(
          async () => (await readAll(db.admin, table)).every((row) => row.select instanceof Date),
          10_000,
          "processedAt on every row",
        );
      } finally {
        await broker.close();
      }
    });
  },
);

describe("identifiers MySQL cannot hold are refused cleanly", () => {
  it("a column name longer than 64 characters fails subscribe with DECLARATION and runs nothing", async () => {
    const { defineTable } = await import("@rowclaim/core");
    const table = defineTable({ name: uniqueName("long"), columns: { id: "id", payload: "p".repeat(65) } });
    const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
    try {
      await expect(broker.subscribe(table, () => undefined)).rejects.toMatchObject({ code: "DECLARATION" });
    } finally {
      await broker.close();
    }
  });
});
