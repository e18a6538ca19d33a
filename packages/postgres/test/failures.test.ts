/**
 * Failures reach callers as rowclaim errors with stable codes, and never as hangs: a killed
 * session (CONNECTION_LOST), a refused connection (CONNECTION_LOST), a pool smaller than the
 * form needs (DECLARATION at subscribe), an exhausted pool (CONNECTION_TIMEOUT), a constraint
 * (CONSTRAINT) and a value out of range (INVALID_ARGUMENT).
 */
import { ack, BrokerError, createBroker, type Delivery, silentLogger } from "@rowclaim/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresDriver } from "../src/index.js";
import { deferred, describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;

beforeAll(async () => {
  db = await TestDb.open();
});

afterAll(async () => {
  await db.close();
});

async function codeOf(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "nothing thrown";
  } catch (error) {
    return BrokerError.is(error) ? error.code : `raw ${String(error)}`;
  }
}

describe("a session killed under a delivery", () => {
  it("the advisory settlement on a terminated session fails with CONNECTION_LOST, and the row stays", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_fail_kill")));
    const appName = uniqueName("rc_kill");
    const driver = createPostgresDriver({ url: db.url, max: 5, applicationName: appName });
    const broker = createBroker({ driver, logger: silentLogger });
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
      // Every session of the driver's pool: the delivery's (holding the key) among them.
      await db.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
        [appName],
      );
      killed.resolve();
      expect(await settled.promise).toBe("CONNECTION_LOST");
      expect(await db.rows(table)).toHaveLength(1);
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });
});

describe("a server that refuses connections", () => {
  it("subscribe (failing fast: startupRetry false) and publish fail with CONNECTION_LOST", async () => {
    const table = describeTable("lease", uniqueName("rc_fail_refused"));
    const driver = createPostgresDriver({ url: "postgres://postgres@127.0.0.1:1/test", max: 2 });
    const broker = createBroker({ driver, logger: silentLogger, startupRetry: false });
    try {
      expect(await codeOf(() => broker.subscribe(table, () => ack()))).toBe("CONNECTION_LOST");
      expect(await codeOf(() => broker.publish(table, "x"))).toBe("CONNECTION_LOST");
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });
});

describe("a pool smaller than the form needs", () => {
  it("subscribing 3 advisory workers on a pool of 3 fails with DECLARATION; a pool of 4 works", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_fail_small")));
    const small = new pg.Pool({ connectionString: db.url, max: 3 });
    const enough = new pg.Pool({ connectionString: db.url, max: 4 });
    const brokers = [small, enough].map((pool) =>
      createBroker({ driver: createPostgresDriver({ pool }), logger: silentLogger }),
    );
    try {
      expect(await codeOf(() => brokers[0]!.subscribe(table, () => ack(), { workers: 3 }))).toBe(
        "DECLARATION",
      );
      let handled = 0;
      await brokers[1]!.subscribe(
        table,
        async (delivery) => {
          // A handler that publishes needs one more connection than the deliveries hold.
          if (delivery.payload === "first")
            await brokers[1]!.publish(table, "second", { values: { account: "b" } });
          handled += 1;
        },
        { workers: 3, pollInterval: 20 },
      );
      await brokers[1]!.publish(table, "first", { values: { account: "a" } });
      await waitFor(async () => handled >= 2 && (await db.rows(table)).length === 0, {
        what: "both rows handled",
      });
    } finally {
      for (const broker of brokers) await broker.close({ timeout: 2000 });
      await small.end();
      await enough.end();
    }
  });

  it("a wait for a connection of an exhausted pool ends in CONNECTION_TIMEOUT, not a hang", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_fail_exhausted")));
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const broker = createBroker({
      driver: createPostgresDriver({ pool, acquireTimeoutMs: 300 }),
      logger: silentLogger,
    });
    await broker.publish(table, "before");
    // The application holds every connection of its pool.
    const held = [await pool.connect(), await pool.connect()];
    try {
      expect(await codeOf(() => broker.publish(table, "while exhausted"))).toBe("CONNECTION_TIMEOUT");
      for (const client of held) client.release();
      await broker.publish(table, "after");
      expect(await db.rows(table)).toHaveLength(2);
    } finally {
      await broker.close({ timeout: 2000 });
      await pool.end();
    }
  });
});

describe("writes the database refuses", () => {
  it("a foreign key violation in a settlement fails with CONSTRAINT and the row stays", async () => {
    const name = uniqueName("rc_fail_fk");
    const table = await db.create(describeTable("lease", name, { extraColumns: ["account"] }));
    await db.query(`CREATE TABLE "${name}_parent" (account text PRIMARY KEY)`);
    await db.query(`INSERT INTO "${name}_parent" VALUES ('a')`);
    await db.query(
      `ALTER TABLE "${name}" ADD CONSTRAINT "${name}_fk" FOREIGN KEY (account) REFERENCES "${name}_parent" (account)`,
    );
    const driver = createPostgresDriver({ url: db.url, max: 4 });
    const broker = createBroker({ driver, logger: silentLogger });
    try {
      expect(await codeOf(() => broker.publish(table, "orphan", { values: { account: "missing" } }))).toBe(
        "CONSTRAINT",
      );
      expect(await db.rows(table)).toHaveLength(0);
    } finally {
      await broker.close({ timeout: 2000 });
      await db.query(`DROP TABLE IF EXISTS "${name}" CASCADE`);
      await db.query(`DROP TABLE IF EXISTS "${name}_parent"`);
    }
  });

  it("a priority past the column's range fails with INVALID_ARGUMENT", async () => {
    const name = uniqueName("rc_fail_range");
    const table = await db.create(describeTable("lease", name));
    const driver = createPostgresDriver({ url: db.url, max: 2 });
    const broker = createBroker({ driver, logger: silentLogger });
    try {
      // The priority column is an integer: SQLSTATE 22003.
      expect(await codeOf(() => broker.publish(table, "x", { priority: 2 ** 40 }))).toBe("INVALID_ARGUMENT");
    } finally {
      await broker.close({ timeout: 2000 });
    }
  });
});
