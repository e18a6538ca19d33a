import { ack, createBroker, type Delivery, retry, silentLogger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { newDriver, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

describe.each(["rowLock", "lease"] as const)(
  "a FIFO group in the %s form keeps its order across brokers",
  (form) => {
    it("three brokers with four workers each deliver a group's rows one at a time, in order", async () => {
      const name = uniqueName(`fifo_${form}`);
      const table = await db.tables.create({
        name,
        columns: {
          id: "id",
          payload: "payload",
          attempt: "attempt",
          runAt: "run_at",
          priority: "priority",
          group: "queue",
          ...(form === "lease" ? { lockedUntil: "locked_until" } : {}),
        },
        fifo: true,
        ...(form === "lease" ? { lease: 5 } : {}),
      });
      const brokers = await Promise.all(
        [1, 2, 3].map(async () => createBroker({ driver: await newDriver(), logger: silentLogger })),
      );
      const count = 12;
      try {
        await brokers[0]?.publishMany(
          table,
          Array.from({ length: count }, (_, n) => ({ payload: n, group: n % 2 === 0 ? "even" : "odd" })),
        );
        const seen: Record<string, number[]> = { even: [], odd: [] };
        const inWork: Record<string, number> = { even: 0, odd: 0 };
        let overlap = false;
        let retriedHead = false;
        const handler = async (delivery: Delivery) => {
          const group = delivery.group ?? "";
          inWork[group] = (inWork[group] ?? 0) + 1;
          if ((inWork[group] ?? 0) > 1) overlap = true;
          await new Promise((resolve) => setTimeout(resolve, 5));
          inWork[group] = (inWork[group] ?? 0) - 1;
          if (!retriedHead && delivery.payload === 0) {
            retriedHead = true;
            return retry();
          }
          seen[group]?.push(delivery.payload as number);
          return ack();
        };
        for (const broker of brokers) {
          await broker.subscribe(table, handler, { group: "even", workers: 4, pollInterval: 20 });
          await broker.subscribe(table, handler, { group: "odd", workers: 4, pollInterval: 20 });
        }
        await waitFor(
          () => (seen.even?.length ?? 0) + (seen.odd?.length ?? 0) === count,
          30_000,
          "every row",
        );
        expect(overlap).toBe(false);
        expect(seen.even).toEqual([0, 2, 4, 6, 8, 10]);
        expect(seen.odd).toEqual([1, 3, 5, 7, 9, 11]);
      } finally {
        await Promise.all(brokers.map((broker) => broker.close()));
      }
    });
  },
);

describe("the FIFO guard of the row lock form holds no more than the head", () => {
  it("while the head of a group is in work, the group's other rows stay unlocked", async () => {
    const table = await db.tables.create({
      name: uniqueName("fifo_bound"),
      columns: { id: "id", payload: "payload", attempt: "attempt", group: "queue" },
      fifo: true,
    });
    const broker = createBroker({ driver: await newDriver(4), logger: silentLogger });
    let release = (): void => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    try {
      const ids = await broker.publishMany(
        table,
        [0, 1, 2, 3].map((n) => ({ payload: n, group: "g" })),
      );
      await broker.subscribe(
        table,
        async () => {
          started = true;
          await held;
          return ack();
        },
        { group: "g", pollInterval: 20 },
      );
      await waitFor(() => started, 10_000, "the head in work");
      // A second session locks a row of the group behind the head without waiting.
      const connection = await db.admin.getConnection();
      try {
        await connection.query("START TRANSACTION");
        const [rows] = await connection.query(
          `SELECT id FROM \`${table.name}\` WHERE id = ? FOR UPDATE NOWAIT`,
          [ids[2]],
        );
        expect(rows).toHaveLength(1);
        await connection.query("ROLLBACK");
      } finally {
        connection.release();
      }
    } finally {
      release();
      await broker.close();
    }
  });
});
