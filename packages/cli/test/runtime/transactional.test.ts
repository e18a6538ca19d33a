// The core README's transactional handler examples (test/examples/transactional.ts), run against
// the real databases: each handler's own write is there exactly once per published row, and the
// queue is empty.
import { join } from "node:path";
import { createBroker, defineTable, type TableDefinition } from "@rowclaim/core";
import { createMysqlDriver } from "@rowclaim/mysql";
import { createPostgresDriver } from "@rowclaim/postgres";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, test } from "vitest";
import { type AdminConnection, openAdminConnection } from "../../src/admin-connection.js";
import { dropTableSql } from "../../src/admin-sql.js";
import { parseTarget } from "../../src/target.js";
import { advisoryExample, leaseExample, rowLockExample, sqliteExample } from "../examples/transactional.js";
import { tempDir, uniquePrefix } from "../support.js";

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** An admin connection to `url`, with `tables` dropped after the file. */
async function admin(
  url: string,
  dialect: "postgres" | "mysql" | "sqlite",
  tables: string[],
): Promise<AdminConnection> {
  const connection = await openAdminConnection(parseTarget(url));
  cleanups.push(async () => {
    for (const table of tables) await connection.execute(dropTableSql(dialect, table));
    await connection.close();
  });
  return connection;
}

/** Rows of the queue table left, and side rows per key column value. */
async function state(
  connection: AdminConnection,
  queue: TableDefinition,
  side: string,
  key: string,
): Promise<{ queued: number; side: Map<string, number> }> {
  const queued = (await connection.query(`SELECT ${queue.columns.id} FROM ${queue.name}`)).length;
  const counts = new Map<string, number>();
  for (const row of await connection.query(`SELECT ${key} FROM ${side}`)) {
    const value = String(row[key]);
    counts.set(value, (counts.get(value) ?? 0) + 1);
  }
  return { queued, side: counts };
}

describe("the core README's transactional handler examples", () => {
  test("row lock form (PostgreSQL): each order's shipment row is written once, with its ack", async () => {
    const url = await databaseUrl("postgres");
    const name = uniquePrefix("tx_rowlock");
    const shipments = `${name}_shipments`;
    const connection = await admin(url, "postgres", [name, shipments]);
    const driver = createPostgresDriver({ url, max: 4 });
    const queue = defineTable({ name, columns: { id: "id", payload: "payload" } });
    await connection.execute(driver.schemaSql(queue));
    await connection.execute(`CREATE TABLE ${shipments} (order_id TEXT NOT NULL, sku TEXT NOT NULL)`);
    const broker = createBroker({ driver });
    try {
      await rowLockExample(broker, name, shipments);
      const ids = await broker.publishMany(queue, [
        { payload: { sku: "A-1", quantity: 1 } },
        { payload: { sku: "B-2", quantity: 2 } },
      ]);
      await expect
        .poll(async () => state(connection, queue, shipments, "order_id"), { timeout: 20_000 })
        .toEqual({ queued: 0, side: new Map(ids.map((id) => [String(id), 1])) });
    } finally {
      await broker.close();
    }
  });

  test("lease form (MySQL/MariaDB): each order's shipment row is written once, with its ack", async () => {
    const url = await databaseUrl("mysql");
    const name = uniquePrefix("tx_lease");
    const shipments = `${name}_shipments`;
    const connection = await admin(url, "mysql", [name, shipments]);
    const driver = createMysqlDriver({ url });
    const queue = defineTable({
      name,
      columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
    });
    await connection.execute(driver.schemaSql(queue));
    await connection.execute(
      `CREATE TABLE ${shipments} (order_id VARCHAR(64) NOT NULL, sku VARCHAR(64) NOT NULL)`,
    );
    const broker = createBroker({ driver });
    try {
      await leaseExample(broker, name, shipments);
      const ids = await broker.publishMany(queue, [
        { payload: { sku: "A-1", quantity: 1 } },
        { payload: { sku: "B-2", quantity: 2 } },
      ]);
      await expect
        .poll(async () => state(connection, queue, shipments, "order_id"), { timeout: 20_000 })
        .toEqual({ queued: 0, side: new Map(ids.map((id) => [String(id), 1])) });
    } finally {
      await broker.close();
    }
  });

  test("advisory lock form (PostgreSQL): each payment's ledger entry is written once, with its ack", async () => {
    const url = await databaseUrl("postgres");
    const name = uniquePrefix("tx_advisory");
    const ledger = `${name}_ledger`;
    const connection = await admin(url, "postgres", [name, ledger]);
    const driver = createPostgresDriver({ url, max: 4 });
    const queue = defineTable({
      name,
      columns: { id: "id", payload: "payload", attempt: "attempt" },
      extraColumns: ["account"],
      advisoryLock: `${name}-{account}`,
    });
    await connection.execute(driver.schemaSql(queue));
    await connection.execute(`CREATE TABLE ${ledger} (payment_id TEXT NOT NULL, cents INTEGER NOT NULL)`);
    const broker = createBroker({ driver });
    try {
      await advisoryExample(broker, name, ledger);
      const ids = await broker.publishMany(queue, [
        { payload: { cents: 100 }, values: { account: "a" } },
        { payload: { cents: 250 }, values: { account: "a" } },
        { payload: { cents: 300 }, values: { account: "b" } },
      ]);
      await expect
        .poll(async () => state(connection, queue, ledger, "payment_id"), { timeout: 20_000 })
        .toEqual({ queued: 0, side: new Map(ids.map((id) => [String(id), 1])) });
    } finally {
      await broker.close();
    }
  });

  test("SQLite: each order's receipt row is written once, with its ack, in an IMMEDIATE transaction", async () => {
    const file = join(tempDir(), "transactional.db");
    const name = uniquePrefix("tx_sqlite");
    const receipts = `${name}_receipts`;
    const connection = await admin(file, "sqlite", []);
    const driver = createSqliteDriver({ filename: file });
    const queue = defineTable({
      name,
      columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
    });
    await connection.execute(driver.schemaSql(queue));
    await connection.execute(`CREATE TABLE ${receipts} (order_id TEXT NOT NULL, quantity INTEGER NOT NULL)`);
    const broker = createBroker({ driver });
    try {
      await sqliteExample(broker, name, receipts);
      const ids = await broker.publishMany(queue, [
        { payload: { sku: "A-1", quantity: 1 } },
        { payload: { sku: "B-2", quantity: 2 } },
      ]);
      await expect
        .poll(async () => state(connection, queue, receipts, "order_id"), { timeout: 20_000 })
        .toEqual({ queued: 0, side: new Map(ids.map((id) => [String(id), 1])) });
    } finally {
      await broker.close();
    }
  });
});
