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

/**
 * Once armed, holds a statement until a second one is running beside it, so that "side by side"
 * is a fact of the order of calls, not of timing: a caller that ran them one after another would
 * never send the second while the first is held, and the test would fail by its own timeout.
 * Once two ran together, every call runs at once. Calls before `arm()` pass uncounted.
 */
class SideBySide {
  running = 0;
  most = 0;
  total = 0;
  #armed = false;
  #passing = 0;
  #open: Promise<void>;
  #release: () => void = () => {};

  constructor() {
    this.#open = new Promise((resolve) => {
      this.#release = resolve;
    });
  }

  /** Counts from now on; the first `passing` calls are not held (a loop that waits for them). */
  arm(passing = 0): void {
    this.#armed = true;
    this.#passing = passing;
  }

  /** Runs `work`, counted once armed, held until a second counted call is in flight. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (!this.#armed) return work();
    this.running += 1;
    this.total += 1;
    this.most = Math.max(this.most, this.running);
    if (this.running >= 2) this.#release();
    try {
      if (this.total > this.#passing) await this.#open;
      return await work();
    } finally {
      this.running -= 1;
    }
  }
}

/** A `pg.Pool` whose clients run the advisory lock-and-take statements through `side`. */
function sideBySidePool(pool: pg.Pool, side: SideBySide): PoolLike {
  return interceptedPool(pool, (config, run) =>
    config.text.includes("pg_try_advisory_lock") ? side.run(() => run(config)) : run(config),
  );
}

describe("an advisory claim tries its keys side by side", () => {
  it("locks and takes four rows of four free keys with one statement each, running at once", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_side")));
    const pool = new pg.Pool({ connectionString: db.url, max: 8 });
    // Connections open before the claim, so that none waits for a new one.
    const warm = await Promise.all(Array.from({ length: 6 }, () => pool.connect()));
    for (const client of warm) client.release();
    const side = new SideBySide();
    const driver = createPostgresDriver({ pool: sideBySidePool(pool, side), notify: false });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.publishMany(
      table,
      [0, 1, 2, 3].map((n) => ({ payload: n, values: { account: `acc${n}` } })),
    );
    const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as AdvisoryClaimer;
    side.arm();
    const claimed = await claimer.claim({ limit: 4, now: new Date() });
    expect(claimed.map((c) => c.row.payload)).toEqual([0, 1, 2, 3]);
    expect(claimed.map((c) => c.row.attempt)).toEqual([1, 1, 1, 1]);
    expect(side.total).toBe(4);
    expect(side.most, "lock-and-take statements in flight together").toBeGreaterThanOrEqual(2);
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
    const side = new SideBySide();
    const open = driver.open.bind(driver);
    driver.open = async (...args: Parameters<typeof driver.open>) => {
      const claimer = (await open(...args)) as RowLockClaimer;
      const claim = claimer.claim.bind(claimer);
      claimer.claim = (request) => side.run(() => claim(request));
      return claimer;
    };
    // The loop waits for its first claim; it claims ahead once a claim found all it asked for.
    side.arm(1);
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
    expect(side.most, "claims in flight together").toBeGreaterThanOrEqual(2);
    expect(side.most, "claims in flight together, at most one a worker").toBeLessThanOrEqual(4);
    await broker.close();
    await driver.close();
  });
});
