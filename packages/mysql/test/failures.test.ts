/**
 * Failures reach callers as rowclaim errors with stable codes, and never as hangs: a killed
 * session (CONNECTION_LOST), a refused connection (CONNECTION_LOST), a pool smaller than the
 * form needs (DECLARATION at subscribe), an exhausted pool (CONNECTION_TIMEOUT), constraint
 * violations (CONSTRAINT), a packet over max_allowed_packet and a runAt past the column's range
 * (INVALID_ARGUMENT); and the recommended schema can run twice.
 */
import { ack, BrokerError, createBroker, type Delivery, defineTable, silentLogger } from "@rowclaim/core";
import { createPool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMysqlDriver, ownPoolOptions } from "../src/index.js";
import { adminPool, mysqlUrl, quote, readAll, uniqueName } from "./support.js";

type Admin = Awaited<ReturnType<typeof adminPool>>;
let admin: Admin;
let url: string;
const dropped: string[] = [];

beforeAll(async () => {
  admin = await adminPool();
  url = await mysqlUrl();
});

afterAll(async () => {
  for (const name of dropped.reverse()) await admin.query(`DROP TABLE IF EXISTS ${quote(name)}`);
  await admin.end();
});

async function codeOf(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "nothing thrown";
  } catch (error) {
    return BrokerError.is(error) ? error.code : `raw ${String(error)}`;
  }
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function advisoryTable(name: string) {
  return defineTable({
    name,
    columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" },
    extraColumns: ["account"],
    advisoryLock: `${name}-{account}`,
  });
}

function leaseTable(name: string) {
  return defineTable({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      lockedUntil: "locked_until",
    },
    extraColumns: ["account"],
    lease: 5,
  });
}

async function create(table: ReturnType<typeof defineTable>): Promise<void> {
  const driver = createMysqlDriver({ url });
  dropped.push(table.name);
  await admin.query(driver.schemaSql(table));
  await driver.close();
}

describe("the recommended schema", () => {
  it("can run twice on the same database (CREATE TABLE IF NOT EXISTS)", async () => {
    const table = leaseTable(uniqueName("twice"));
    await create(table);
    const driver = createMysqlDriver({ url });
    await admin.query(driver.schemaSql(table));
    await driver.close();
  });
});

describe("a session killed under a delivery", () => {
  it("the advisory settlement on a killed session fails with CONNECTION_LOST, and the row stays", async () => {
    const table = advisoryTable(uniqueName("kill"));
    await create(table);
    const broker = createBroker({
      driver: createMysqlDriver({ url, connectionLimit: 4 }),
      logger: silentLogger,
    });
    const started = deferred<Delivery>();
    const killed = deferred();
    const settled = deferred<string>();
    try {
      await broker.subscribe(
        table,
        async (delivery) => {
          started.resolve(delivery);
          await killed.promise;
          settled.resolve(await codeOf(() => delivery.settle(ack())));
        },
        { pollInterval: 20 },
      );
      await broker.publish(table, "doomed", { values: { account: "a" } });
      await started.promise;
      const [holders] = await admin.query(`SELECT IS_USED_LOCK(CONCAT(LOWER(DATABASE()), '.', ?)) AS id`, [
        `${table.name}-a`,
      ]);
      const thread = (holders as { id: number | null }[])[0]?.id;
      expect(thread).not.toBeNull();
      await admin.query(`KILL CONNECTION ${Number(thread)}`);
      killed.resolve();
      expect(await settled.promise).toBe("CONNECTION_LOST");
      expect(await readAll(admin, table)).toHaveLength(1);
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });
});

describe("a server that refuses connections", () => {
  it("subscribe (failing fast: startupRetry false) and publish fail with CONNECTION_LOST", async () => {
    const table = leaseTable(uniqueName("refused"));
    const broker = createBroker({
      driver: createMysqlDriver({ url: "mysql://root@127.0.0.1:1/test" }),
      logger: silentLogger,
      startupRetry: false,
    });
    try {
      expect(await codeOf(() => broker.subscribe(table, () => ack()))).toBe("CONNECTION_LOST");
      expect(await codeOf(() => broker.publish(table, "x"))).toBe("CONNECTION_LOST");
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });
});

describe("a pool smaller than the form needs", () => {
  it("subscribing 3 advisory workers on a pool of 3 fails with DECLARATION", async () => {
    const table = advisoryTable(uniqueName("small"));
    await create(table);
    const pool = createPool({ uri: url, ...ownPoolOptions, connectionLimit: 3 });
    const broker = createBroker({ driver: createMysqlDriver({ pool }), logger: silentLogger });
    try {
      expect(await codeOf(() => broker.subscribe(table, () => ack(), { workers: 3 }))).toBe("DECLARATION");
      await broker.subscribe(table, () => ack(), { workers: 2 });
    } finally {
      await broker.close({ timeout: 2000 });
      await pool.end();
    }
  });

  it("a wait for a connection of an exhausted pool ends in CONNECTION_TIMEOUT, not a hang", async () => {
    const table = leaseTable(uniqueName("exhausted"));
    await create(table);
    const pool = createPool({ uri: url, ...ownPoolOptions, connectionLimit: 1 });
    const broker = createBroker({
      driver: createMysqlDriver({ pool, acquireTimeoutMs: 300 }),
      logger: silentLogger,
    });
    await broker.publish(table, "before");
    const held = await pool.getConnection();
    try {
      expect(await codeOf(() => broker.publish(table, "while exhausted"))).toBe("CONNECTION_TIMEOUT");
    } finally {
      held.release();
    }
    await broker.publish(table, "after");
    expect(await readAll(admin, table)).toHaveLength(2);
    await broker.close({ timeout: 2000 });
    await pool.end();
  });
});

describe("writes the server refuses", () => {
  it("a foreign key violation fails with CONSTRAINT", async () => {
    const table = leaseTable(uniqueName("fk"));
    await create(table);
    const parent = `${table.name}_p`;
    dropped.unshift(parent);
    await admin.query(
      `CREATE TABLE ${quote(parent)} (account VARCHAR(191) PRIMARY KEY) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
    );
    await admin.query(
      `ALTER TABLE ${quote(table.name)} ADD CONSTRAINT ${quote(`${table.name}_fk`)} FOREIGN KEY (account) REFERENCES ${quote(parent)} (account)`,
    );
    const broker = createBroker({ driver: createMysqlDriver({ url }), logger: silentLogger });
    try {
      expect(await codeOf(() => broker.publish(table, "orphan", { values: { account: "none" } }))).toBe(
        "CONSTRAINT",
      );
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });

  it("a runAt past the DATETIME range fails with INVALID_ARGUMENT", async () => {
    const table = leaseTable(uniqueName("range"));
    await create(table);
    const broker = createBroker({ driver: createMysqlDriver({ url }), logger: silentLogger });
    try {
      expect(
        await codeOf(() => broker.publish(table, "far", { runAt: new Date("+010000-01-01T00:00:00Z") })),
      ).toBe("INVALID_ARGUMENT");
      expect(await readAll(admin, table)).toHaveLength(0);
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });

  it("a payload over max_allowed_packet fails with INVALID_ARGUMENT", async () => {
    const table = leaseTable(uniqueName("packet"));
    await create(table);
    const [rows] = await admin.query("SELECT @@max_allowed_packet AS n");
    const limit = Number((rows as { n: number }[])[0]?.n);
    const broker = createBroker({ driver: createMysqlDriver({ url }), logger: silentLogger });
    try {
      expect(await codeOf(() => broker.publish(table, "x".repeat(limit + 1024)))).toBe("INVALID_ARGUMENT");
      await broker.publish(table, "small");
      expect(await readAll(admin, table)).toHaveLength(1);
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });
});

describe("close while your code holds a connection of the driver's pool", () => {
  it("close({ timeout }) returns and logs CLOSE_TIMEOUT while the connection runs a statement", async () => {
    const table = leaseTable(uniqueName("close_held"));
    await create(table);
    const warnings: unknown[] = [];
    const driver = createMysqlDriver({ url, connectionLimit: 4 });
    const broker = createBroker({
      driver,
      logger: { warn: (_message, details) => warnings.push(details?.err), error: () => {} },
    });
    await broker.subscribe(table, () => ack(), { pollInterval: 50 });
    const held = await driver.pool.getConnection();
    // mysql2 ends a pool by queueing a QUIT on every connection: behind this statement, it waits.
    const running = held.query("SELECT SLEEP(600)").catch(() => undefined);
    try {
      await broker.close({ timeout: 200 });
      expect(warnings.some((error) => BrokerError.is(error, "CLOSE_TIMEOUT"))).toBe(true);
    } finally {
      await admin.query("KILL QUERY ?", [held.threadId]);
      await running;
    }
  });
});
