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

describe("publish inside the caller's transaction", () => {
  it("a row published with { client } exists only once the caller commits", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_txpub")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const id = await broker.publish(table, { order: 1 }, { client });
      expect(id).toBeDefined();
      expect(await db.rows(table)).toHaveLength(0);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const rows = await db.rows(table);
    expect(rows.map((row) => row.payload)).toEqual([{ order: 1 }]);
    await broker.close();
  });

  it("a row published with { client } is gone when the caller rolls back, and no subscription sees it", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_txpub_rb")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const seen: Delivery[] = [];
    await broker.subscribe(
      table,
      (delivery) => {
        seen.push(delivery);
      },
      { pollInterval: 20 },
    );
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await broker.publishMany(table, [{ payload: 1 }, { payload: 2 }], { client });
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    await broker.publish(table, 3);
    // The handler is entered before its row lock batch commits the ack: wait for the table too.
    await waitFor(async () => seen.length >= 1 && (await db.rows(table)).length === 0, {
      what: "the committed row to be delivered and acked",
    });
    expect(seen.map((d) => d.payload)).toEqual([3]);
    await broker.close();
  });

  it("a client that is not a pg client is refused with INVALID_ARGUMENT", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_txpub_bad")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    await expect(broker.publish(table, 1, { client: { nope: true } })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    await broker.close();
  });

  it("a client that never sent BEGIN, a pool, and a client in a failed transaction are refused with INVALID_ARGUMENT and write nothing", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_txpub_none")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const client = await db.pool.connect();
    try {
      await expect(broker.publish(table, "autocommit", { client })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      await expect(broker.publish(table, "a pool", { client: db.pool })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      await client.query("BEGIN");
      await client.query("SELECT 1/0").catch(() => undefined);
      await expect(broker.publish(table, "failed", { client })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect(await db.rows(table)).toEqual([]);
    await broker.close();
  });

  it("a BEGIN sent without waiting for it counts: the publish joins the transaction", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_txpub_queued")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const client = await db.pool.connect();
    try {
      const begun = client.query("BEGIN");
      await broker.publish(table, "queued", { client });
      await begun;
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect(await db.rows(table)).toEqual([]);
    await broker.close();
  });
});
