/**
 * Behind a real PgBouncer (tooling/pgbouncer.sh): what the startup probes find in session and
 * transaction mode, and what each form does in transaction mode. The whole conformance suite
 * through session mode is in pgbouncer-session-conformance.test.ts.
 */
import {
  ack,
  BrokerError,
  createBroker,
  type Logger,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPostgresDriver, type PostgresDriver } from "../src/index.js";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";
import { pgbouncerUrls } from "./pgbouncer-env.js";

let db: TestDb;
const urls = pgbouncerUrls();

beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

function recordingLogger(): Logger & { warnings: { message: string; details: unknown }[] } {
  const warnings: { message: string; details: unknown }[] = [];
  return {
    warnings,
    warn(message, details) {
      warnings.push({ message, details });
    },
    error() {},
  };
}

async function publishRows(driverUrl: string, table: TableDefinition, count: number): Promise<void> {
  const broker = createBroker({
    driver: createPostgresDriver({ url: driverUrl, max: 4 }),
    logger: silentLogger,
  });
  const values = table.form === "advisory" ? { values: { account: "a" } } : {};
  await broker.publishMany(
    table,
    Array.from({ length: count }, (_, n) => ({ payload: { n }, ...values })),
  );
  await broker.close();
}

/** Runs one subscription of `workers` workers through `driver` until the table is empty; returns how often each row was delivered. */
async function drain(driver: PostgresDriver, table: TableDefinition, workers: number) {
  const broker = createBroker({ driver, logger: silentLogger });
  const seen = new Map<number, number>();
  await broker.subscribe(
    table,
    (delivery) => {
      const n = (delivery.payload as { n: number }).n;
      seen.set(n, (seen.get(n) ?? 0) + 1);
      return ack();
    },
    { workers, pollInterval: 50 },
  );
  await waitFor(async () => (await db.rows(table)).length === 0, {
    what: "every row acked",
    timeout: 60_000,
  });
  await broker.close();
  return seen;
}

describe("the startup probes find what each connection path keeps", () => {
  it("a direct connection and PgBouncer in session mode keep advisory locks and LISTEN", async () => {
    for (const url of [db.url, urls.session]) {
      const table = await db.create(describeTable("advisory", uniqueName("rc_probe_ok")));
      const driver = createPostgresDriver({ url, max: 4, notify: true });
      const broker = createBroker({ driver, logger: silentLogger });
      await broker.subscribe(table, () => ack());
      expect(driver.detected()).toMatchObject({ advisoryLock: true, listen: true });
      await broker.close();
    }
  });

  it("PgBouncer in transaction mode is found out: advisory locks do not exclude and LISTEN does not survive", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_probe_tx")));
    const driver = createPostgresDriver({ url: urls.transaction, max: 4, notify: true });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.subscribe(table, () => ack());
    expect(driver.detected()).toMatchObject({ advisoryLock: false, listen: false });
    await broker.close();
  });

  it("a row held FOR UPDATE is skipped by another session on every path, transaction mode included", async () => {
    for (const url of [db.url, urls.session, urls.transaction]) {
      const table = await db.create(describeTable("rowLock", uniqueName("rc_probe_rowlock")));
      await publishRows(db.url, table, 1);
      const driver = createPostgresDriver({ url, max: 4 });
      const broker = createBroker({ driver, logger: silentLogger });
      await broker.subscribe(table, () => ack());
      expect(driver.detected().skipLocked).toBe(true);
      await broker.close();
    }
  });

  it("a skipped probe is not run and not reported", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_probe_skip")));
    const driver = createPostgresDriver({ url: db.url, max: 4, skipProbes: ["advisoryLock"] });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.subscribe(table, () => ack());
    expect(driver.detected().advisoryLock).toBeUndefined();
    await broker.close();
  });
});

describe("behind PgBouncer in transaction mode the driver sends no named prepared statements", () => {
  it("150 concurrent publishes all succeed (a named statement would be missing, or already exist, on another server session)", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_pgb_unnamed")));
    const broker = createBroker({
      driver: createPostgresDriver({ url: urls.transaction, max: 6 }),
      logger: silentLogger,
    });
    for (let round = 0; round < 5; round += 1) {
      await Promise.all(Array.from({ length: 30 }, (_, n) => broker.publish(table, { n })));
    }
    expect(await db.rows(table)).toHaveLength(150);
    await broker.close();
  });
});

describe("behind PgBouncer in transaction mode the advisory lock form is refused at subscribe", () => {
  it("subscribe fails with PROBE_FAILED naming the probe, and claims nothing", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_pgb_adv")));
    await publishRows(db.url, table, 3);
    const driver = createPostgresDriver({ url: urls.transaction, max: 4 });
    const broker = createBroker({ driver, logger: silentLogger });
    const refused = await broker
      .subscribe(table, () => ack())
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(BrokerError.is(refused, "PROBE_FAILED")).toBe(true);
    expect((refused as { probe?: string }).probe).toBe("advisoryLock");
    const rows = await db.rows(table);
    expect(rows.map((row) => row.attempt)).toEqual([1, 1, 1]);
    await broker.close();
  });
});

describe("behind PgBouncer in transaction mode the lease and row lock forms deliver every row once", () => {
  it.each(["lease", "rowLock"] as const)(
    "the %s form drains 200 rows with 4 workers, each row once",
    async (form) => {
      const table = await db.create(
        describeTable(form, uniqueName(`rc_pgb_${form}`), form === "lease" ? { lease: 5 } : {}),
      );
      await publishRows(urls.transaction, table, 200);
      const seen = await drain(createPostgresDriver({ url: urls.transaction, max: 6 }), table, 4);
      expect(seen.size).toBe(200);
      expect([...seen.values()].every((times) => times === 1)).toBe(true);
    },
  );
});

describe("behind PgBouncer in transaction mode wake-ups fall back to polling", () => {
  it("listening fails its probe with one warning for the driver, and rows published elsewhere are still claimed by polling", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_pgb_poll")));
    const logger = recordingLogger();
    const driver = createPostgresDriver({ url: urls.transaction, max: 4, notify: true });
    const broker = createBroker({ driver, logger });
    const seen: number[] = [];
    await broker.subscribe(
      table,
      (delivery) => {
        seen.push((delivery.payload as { n: number }).n);
        return ack();
      },
      { pollInterval: 100 },
    );
    // A second subscription of the same driver polls too, without another warning.
    const other = await db.create(describeTable("lease", uniqueName("rc_pgb_poll2")));
    await broker.subscribe(other, () => ack(), { pollInterval: 100 });
    const probeWarnings = logger.warnings.filter(({ details }) =>
      BrokerError.is(
        (details as { err?: unknown; error?: unknown } | undefined)?.err ??
          (details as { error?: unknown } | undefined)?.error,
        "PROBE_FAILED",
      ),
    );
    expect(probeWarnings).toHaveLength(1);
    await publishRows(db.url, table, 3);
    await waitFor(() => seen.length === 3, { what: "three rows claimed by polling" });
    await broker.close();
  });
});
