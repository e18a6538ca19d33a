/**
 * What a lease claim returns: each value once, and nothing the claim already knows. The payload
 * of a json column comes only as text (parsed once, by the driver), and lockedUntil not at all
 * (the claim wrote the expiry it holds), while the delivery's row still reads as it did. An
 * advisory claim locks and takes each row in one statement, on each key's connection at once.
 */
import { createBroker, silentLogger } from "@rowclaim/core";
import {
  type AdvisoryClaimer,
  type LeaseClaimer,
  leaseExpiry,
  type RowLockClaimer,
} from "@rowclaim/core/driver";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createPostgresDriver } from "../src/index.js";
import type { PoolLike } from "../src/pool-like.js";
import { type ColumnTypes, leaseClaimSql } from "../src/sql.js";
import { describeTable, interceptedPool, TestDb, uniqueName, waitFor } from "./helpers.js";

const db = TestDb.forFile();

describe("a lease claim returns each column once", () => {
  it.each(["json", "jsonb"])("returns a %s payload only as text and no lockedUntil", (payloadType) => {
    const table = describeTable("lease", "jobs");
    const types: ColumnTypes = new Map([
      ["id", "bigint"],
      ["payload", payloadType],
      ["locked_until", "timestamp with time zone"],
    ]);
    const returning = leaseClaimSql(table, null, types).general.text.split(" RETURNING ")[1] ?? "";
    expect(returning.match(/"payload"/g)).toHaveLength(1);
    expect(returning).toContain('"payload"::text');
    expect(returning).not.toContain('"locked_until"');
  });

  it("a claimed row reads the payload, the expiry and the counted attempt as a full read would", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_shape"), { lease: 30 }));
    const driver = db.driver();
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.publish(table, { n: 1, nested: { list: [1, "two"] } });
    const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
    const now = new Date();
    const expiry = leaseExpiry(now, 30);
    const [claimed] = await claimer.claim({ limit: 1, now, expiry });
    if (claimed === undefined) throw new Error("nothing claimed");
    expect(claimed.row.payload).toEqual({ n: 1, nested: { list: [1, "two"] } });
    expect(claimed.row.row.payload).toEqual({ n: 1, nested: { list: [1, "two"] } });
    expect(claimed.row.attempt).toBe(1);
    expect(claimed.row.row.attempt).toBe(2);
    expect((claimed.row.row.locked_until as Date).getTime()).toBe(expiry.getTime());
    expect(Object.keys(claimed.row.row)).toEqual(table.allColumns);
    await claimer.settle(claimed.row.id, claimed.token, { kind: "delete" });
    expect(await db.rows(table)).toHaveLength(0);
    await claimer.close();
    await broker.close();
  });
});

/** A `pg.Pool` whose clients count the advisory lock-and-take statements running at once. */
function countingPool(pool: pg.Pool, counts: { running: number; most: number; total: number }): PoolLike {
  return interceptedPool(pool, async (config, run) => {
    const counted = config.text.includes("pg_try_advisory_lock");
    if (counted) {
      counts.running += 1;
      counts.total += 1;
      counts.most = Math.max(counts.most, counts.running);
    }
    try {
      return await run(config);
    } finally {
      if (counted) counts.running -= 1;
    }
  });
}

describe("an advisory claim tries its keys side by side", () => {
  it("locks and takes four rows of four free keys with one statement each, running at once", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_side")));
    const pool = new pg.Pool({ connectionString: db.url, max: 8 });
    // Connections open before the claim, so that none waits for a new one.
    const warm = await Promise.all(Array.from({ length: 6 }, () => pool.connect()));
    for (const client of warm) client.release();
    const counts = { running: 0, most: 0, total: 0 };
    const driver = createPostgresDriver({ pool: countingPool(pool, counts), notify: false });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.publishMany(
      table,
      [0, 1, 2, 3].map((n) => ({ payload: n, values: { account: `acc${n}` } })),
    );
    const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as AdvisoryClaimer;
    counts.total = 0;
    counts.most = 0;
    const claimed = await claimer.claim({ limit: 4, now: new Date() });
    expect(claimed.map((c) => c.row.payload)).toEqual([0, 1, 2, 3]);
    expect(claimed.map((c) => c.row.attempt)).toEqual([1, 1, 1, 1]);
    expect(counts.total).toBe(4);
    expect(counts.most).toBeGreaterThan(1);
    for (const { row, token } of claimed) await claimer.settle(token, row, { kind: "delete" });
    expect(await db.rows(table)).toHaveLength(0);
    await claimer.close();
    await broker.close();
    await driver.close();
    await pool.end();
  });
});

describe("a row lock subscription claims ahead while workers are free", () => {
  it("runs several one-row claims at once with four workers and the default batch, and delivers every row once", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_ahead")));
    const driver = db.driver({ max: 8 });
    let running = 0;
    let most = 0;
    const open = driver.open.bind(driver);
    driver.open = async (...args: Parameters<typeof driver.open>) => {
      const claimer = (await open(...args)) as RowLockClaimer;
      const claim = claimer.claim.bind(claimer);
      claimer.claim = async (request) => {
        running += 1;
        most = Math.max(most, running);
        try {
          return await claim(request);
        } finally {
          running -= 1;
        }
      };
      return claimer;
    };
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.publishMany(
      table,
      Array.from({ length: 30 }, (_, n) => ({ payload: n })),
    );
    const seen: unknown[] = [];
    const subscription = await broker.subscribe(
      table,
      async (delivery) => {
        seen.push(delivery.payload);
      },
      { workers: 4 },
    );
    expect(subscription.batch).toBe(1);
    await waitFor(async () => (await db.rows(table)).length === 0 && seen.length === 30, {
      what: "every row to be settled",
    });
    expect([...seen].sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 30 }, (_, n) => n));
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
    await broker.close();
    await driver.close();
  });
});
