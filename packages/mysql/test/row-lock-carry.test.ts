/**
 * A row lock batch's end carries the next claim (core's `endBatchWithClaim`) on MySQL/MariaDB:
 * the acks, `COMMIT AND CHAIN` and the claim's `SELECT` on the batch's connection, against the
 * real server; and a broker draining a queue this way, every row once and in order. Which batch
 * ends carry a claim is core's to decide, tested without a database in core's `ack-carrier.test.ts`.
 */
import { createBroker, silentLogger } from "@rowclaim/core";
import type { BatchEnd, RowLockClaimer, RowLockToken } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import { createMysqlDriver } from "../src/index.js";
import type { MysqlRowLockClaimer } from "../src/row-lock.js";
import { mysqlUrl, quote, readAll, recordingPool, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture(4);

const rowLockShape = (name: string) => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" },
});

/** A table of `count` rows, payloads 1..count. */
async function tableOf(count: number) {
  const table = await db.tables.create(rowLockShape(uniqueName("carry")));
  await db.admin.query(
    `INSERT INTO ${quote(table.name)} (payload) VALUES ${Array.from({ length: count }, (_, n) => `('${n + 1}')`).join(", ")}`,
  );
  return table;
}

/** The payloads of the rows no transaction holds locked now. */
async function unlocked(name: string): Promise<unknown[]> {
  const connection = await db.admin.getConnection();
  try {
    await connection.query("START TRANSACTION");
    const [rows] = await connection.query(
      `SELECT payload FROM ${quote(name)} ORDER BY id FOR UPDATE SKIP LOCKED`,
    );
    await connection.query("ROLLBACK");
    return (rows as { payload: unknown }[]).map((row) => row.payload);
  } finally {
    connection.release();
  }
}

/**
 * Claims one row, then ends that batch with the row deleted, carrying a claim of up to `limit`
 * rows (`endBatchWithClaim`); `beforeCarry` runs in between.
 */
async function claimThenCarry<T extends RowLockToken>(
  claimer: RowLockClaimer<T>,
  limit: number,
  beforeCarry: () => void = () => undefined,
): Promise<BatchEnd<T>> {
  const batch = await claimer.claim({ limit: 1, now: new Date() });
  if (batch === null || claimer.endBatchWithClaim === undefined)
    throw new Error("no batch, or no endBatchWithClaim");
  beforeCarry();
  return claimer.endBatchWithClaim(
    batch.token,
    { rows: batch.rows, settlement: { kind: "delete" } },
    { limit, now: new Date() },
  );
}

describe("a row lock batch's end carrying the next claim", () => {
  it("acks, commits and chains the next claim's transaction on the same session (MariaDB: in one compound statement): the acked row gone, the next locked", async () => {
    const table = await tableOf(3);
    const statements: string[] = [];
    const driver = createMysqlDriver({ pool: recordingPool(db.driver.pool, statements) });
    const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as MysqlRowLockClaimer;
    const result = await claimThenCarry(claimer, 1, () => {
      statements.length = 0;
    });
    const shapes = statements.map((sql) => sql.replace(/\s+/g, " ").replace(/`[^`]*`/g, "`t`"));
    if ((await db.driver.serverInfo()).version.family === "mariadb") {
      // One compound statement: the ack, the commit chaining the next transaction, the commit's
      // mark, and the claim.
      expect(shapes).toEqual([
        expect.stringMatching(
          /^BEGIN NOT ATOMIC DELETE FROM `t` WHERE .*; COMMIT AND CHAIN; SET @rowclaim_chain = \?; SELECT .* FOR UPDATE SKIP LOCKED; END$/,
        ),
      ]);
    } else {
      expect(shapes).toEqual([
        expect.stringMatching(/^DELETE FROM `t` WHERE /),
        "COMMIT AND CHAIN",
        expect.stringMatching(/^SELECT .* FOR UPDATE SKIP LOCKED$/),
      ]);
    }
    expect(result.ended).toBeUndefined();
    const next = result.claimed;
    if (next === null || "error" in next) throw new Error(`no next batch: ${String(next?.error)}`);
    try {
      expect(next.rows.map((row) => row.payload)).toEqual([2]);
      expect((await unlocked(table.name)).map(Number)).toEqual([3]);
    } finally {
      await claimer.endBatch(next.token);
      await claimer.close();
    }
    expect((await readAll(db.admin, table)).map((row) => Number(row.payload))).toEqual([2, 3]);
  });

  it("reports a failed ack apart: nothing of the batch committed, and the claim after it still runs", async () => {
    const table = await tableOf(2);
    const guard = uniqueName("carry_ref");
    await db.admin.query(
      `CREATE TABLE ${quote(guard)} (ref BIGINT, FOREIGN KEY (ref) REFERENCES ${quote(table.name)} (id) ON DELETE RESTRICT) ENGINE=InnoDB`,
    );
    const claimer = (await db.driver.open(table, {
      group: null,
      logger: silentLogger,
    })) as MysqlRowLockClaimer;
    try {
      await db.admin.query(`INSERT INTO ${quote(guard)} SELECT MIN(id) FROM ${quote(table.name)}`);
      const result = await claimThenCarry(claimer, 2);
      expect((result.ended?.error as { code?: unknown } | undefined)?.code).toBe("CONSTRAINT");
      const next = result.claimed;
      if (next === null || "error" in next) throw new Error(`no next batch: ${String(next?.error)}`);
      // The failed batch rolled back before the claim began: its row is due again and taken.
      await claimer.release(next.token);
      expect(next.rows.map((row) => row.payload)).toEqual([1, 2]);
      expect(await readAll(db.admin, table)).toHaveLength(2);
    } finally {
      await db.admin.query(`DROP TABLE IF EXISTS ${quote(guard)}`);
      await claimer.close();
    }
  });

  it("ends the chained transaction and gives the connection back when no row is due", async () => {
    const table = await tableOf(1);
    // Two connections, and a short wait for one: a connection kept would time the last claims out.
    const driver = createMysqlDriver({ url: await mysqlUrl(), connectionLimit: 2, acquireTimeoutMs: 2_000 });
    const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as RowLockClaimer;
    try {
      const result = await claimThenCarry(claimer, 1);
      expect(result).toEqual({ ended: undefined, claimed: null });
      expect(await readAll(db.admin, table)).toEqual([]);
      await db.admin.query(`INSERT INTO ${quote(table.name)} (payload) VALUES ('1'), ('2')`);
      const both = await Promise.all([1, 2].map(() => claimer.claim({ limit: 1, now: new Date() })));
      for (const taken of both) if (taken !== null) await claimer.release(taken.token);
      expect(both.map((taken) => taken?.rows.length)).toEqual([1, 1]);
    } finally {
      await claimer.close();
      await driver.close();
    }
  });
});

describe("a row lock subscription whose worker acks row after row", () => {
  it("settles every row once and in order, its batch ends carrying the next claims", async () => {
    const count = 30;
    const table = await tableOf(count);
    const broker = createBroker({
      driver: createMysqlDriver({ url: await mysqlUrl() }),
      logger: silentLogger,
    });
    const handled: unknown[] = [];
    const subscription = await broker.subscribe(table, (delivery) => void handled.push(delivery.payload), {
      workers: 1,
      pollInterval: 20,
    });
    await expect.poll(() => subscription.stats.acked, { timeout: 30_000 }).toBe(count);
    await broker.close();
    expect(await readAll(db.admin, table)).toEqual([]);
    expect(handled.map(Number)).toEqual(Array.from({ length: count }, (_, n) => n + 1));
  });
});
