import { ack, createBroker, silentLogger } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { HeldHandler, newDriver, quote, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

const rowLockShape = (name: string) => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" },
});

describe("a row lock claim at READ COMMITTED locks its rows and not the gaps", () => {
  it("an INSERT into the same table goes through while the claim's handler runs", async () => {
    const table = await db.tables.create(rowLockShape(uniqueName("gap")));
    const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
    const held = new HeldHandler();
    try {
      await broker.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
      await broker.subscribe(table, held.handle, { batch: 2, workers: 2, pollInterval: 50 });
      await waitFor(() => held.running, 10_000, "the handler to run");
      const connection = await db.admin.getConnection();
      try {
        await connection.query("SET SESSION innodb_lock_wait_timeout = 2");
        await connection.query(
          `INSERT INTO ${quote(table.name)} (payload, run_at) VALUES ('3', NULL), ('4', '1970-01-02 00:00:00')`,
        );
        await connection.query(`UPDATE ${quote(table.name)} SET priority = 5 WHERE id > 2`);
      } finally {
        connection.release();
      }
      held.release();
      await waitFor(
        async () => (await readAll(db.admin, table)).length === 0,
        20_000,
        "every row to be acked",
      );
    } finally {
      held.release();
      await broker.close();
    }
  });
});

describe("a row lock FIFO table at SERIALIZABLE is refused at open", () => {
  it("subscribe fails with DECLARATION", async () => {
    const table = await db.tables.create({
      name: uniqueName("ser"),
      columns: { id: "id", payload: "payload", group: "queue" },
      fifo: true,
      isolation: "serializable",
    });
    const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
    try {
      await expect(broker.subscribe(table, () => ack(), { group: "a" })).rejects.toMatchObject({
        code: "DECLARATION",
      });
    } finally {
      await broker.close();
    }
  });
});

describe("every isolation level a table names is used for its claims", () => {
  it.each(["read uncommitted", "read committed", "repeatable read", "serializable"] as const)(
    "%s delivers rows",
    async (isolation) => {
      const table = await db.tables.create({ ...rowLockShape(uniqueName("iso")), isolation });
      const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
      try {
        await broker.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
        const seen: unknown[] = [];
        await broker.subscribe(table, (delivery) => void seen.push(delivery.payload), { pollInterval: 50 });
        await waitFor(() => seen.length === 2, 20_000, "both rows");
        expect(seen).toEqual([1, 2]);
      } finally {
        await broker.close();
      }
    },
  );
});
