import { createBroker, type Delivery, silentLogger } from "@rowclaim/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresDriver } from "../src/index.js";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

describe("the driver's capabilities", () => {
  it("offers every form, FIFO in row lock and lease, every isolation level, database-wide keys and transactional publish", async () => {
    const driver = createPostgresDriver({ url: db.url });
    expect(driver.name).toBe("postgres");
    expect(driver.dialect).toBe("postgres");
    expect(driver.capabilities).toMatchObject({
      forms: ["rowLock", "lease", "advisory"],
      fifo: ["rowLock", "lease"],
      isolationLevels: ["read uncommitted", "read committed", "repeatable read", "serializable"],
      advisoryScope: "database",
      crossProcessWake: false,
      transactionalPublish: true,
    });
    await driver.close();
  });

  it("refuses options without a pool or a url with INVALID_ARGUMENT", () => {
    expect(() => createPostgresDriver({ url: "" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("who owns the pool", () => {
  it("a pool the user gives is used and never ended by close()", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_own_pool")));
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    const driver = createPostgresDriver({ pool });
    const broker = createBroker({ driver, logger: silentLogger });
    const seen: Delivery[] = [];
    await broker.subscribe(table, (delivery) => {
      seen.push(delivery);
    });
    await broker.publish(table, { n: 1 });
    await waitFor(() => seen.length === 1, { what: "the delivery" });
    await broker.close();
    expect(pool.ended).toBe(false);
    const result = await pool.query("SELECT 1 AS one");
    expect(result.rows[0]?.one).toBe(1);
    await pool.end();
  });

  it("a pool the driver made from a url is ended by close()", async () => {
    const driver = createPostgresDriver({ url: db.url, max: 2 });
    await driver.pool.query({ text: "SELECT 1" });
    await driver.close();
    expect((driver.pool as unknown as pg.Pool).ended).toBe(true);
  });
});

describe("after close()", () => {
  it("the driver refuses open, publish and unique publish with CLOSED, on a pool the user gives too", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_closed_guard")));
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const driver = createPostgresDriver({ pool });
    await driver.close();
    await expect(driver.open(table, { group: null, logger: silentLogger })).rejects.toMatchObject({
      code: "CLOSED",
    });
    await expect(driver.publish(table, [], {})).rejects.toMatchObject({ code: "CLOSED" });
    await expect(driver.publishUnique?.(table, [], {})).rejects.toMatchObject({ code: "CLOSED" });
    await driver.close();
    expect(pool.ended).toBe(false);
    await pool.end();
  });
});

describe("isolation levels", () => {
  it.each([
    ["rowLock", "read uncommitted"],
    ["rowLock", "read committed"],
    ["rowLock", "repeatable read"],
    ["rowLock", "serializable"],
    ["lease", "repeatable read"],
    ["lease", "serializable"],
  ] as const)("a %s table at %s claims and settles every row", async (form, isolation) => {
    const table = await db.create(describeTable(form, uniqueName(`rc_iso_${form}`), { isolation }));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    await broker.publishMany(
      table,
      [1, 2, 3, 4, 5, 6].map((payload) => ({ payload })),
    );
    const seen = new Set<unknown>();
    await broker.subscribe(
      table,
      (delivery) => {
        seen.add(delivery.payload);
      },
      { workers: 3, pollInterval: 20 },
    );
    await waitFor(async () => seen.size === 6 && (await db.rows(table)).length === 0, { what: "every row" });
    await broker.close();
  });
});
