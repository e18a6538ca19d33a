/**
 * Coalesced settlements (a lease `settleMany`, a row lock batch's `endBatch`), called on the claimers directly: one statement settles
 * many rows, each lease row fenced by its own token, a row lock batch's rows inside its
 * transaction; a failure changes nothing. And the advisory form's settlement and unlock as one
 * statement, which no other session can see unlocked before the settlement commits.
 */
import { BrokerError, defineTable, type TableDefinition } from "@rowclaim/core";
import { type AdvisoryClaimer, type LeaseToken, leaseExpiry } from "@rowclaim/core/driver";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createPostgresDriver, type PostgresDriver, quoteIdent } from "../src/index.js";
import type { PostgresLeaseClaimer } from "../src/lease.js";
import type { PoolLike } from "../src/pool-like.js";
import type { PostgresRowLockClaimer } from "../src/row-lock.js";
import { leaseSettleManySql, rowLockSettleManySql } from "../src/sql.js";
import {
  claimBatch,
  describeTable,
  interceptedPool,
  openClaimer,
  publishRows,
  TestDb,
  uniqueName,
  waitFor,
} from "./helpers.js";

const db = TestDb.forFile();

/** A `pg.Pool` whose clients (and the pool itself) record the text of every statement they run. */
function recordingPool(pool: pg.Pool, texts: string[]): PoolLike {
  return interceptedPool(
    pool,
    (config, run) => {
      texts.push(config.text);
      return run(config);
    },
    { poolQueries: true },
  );
}

/** A driver on a pool of the test's own that records every statement's text in `texts`; end `pool` after the driver. */
function recordingDriver(texts: string[]): { driver: PostgresDriver; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  return { driver: createPostgresDriver({ pool: recordingPool(pool, texts) }), pool };
}

async function codeOf(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return "resolved";
  } catch (error) {
    return BrokerError.is(error) ? error.code : `raw ${String(error)}`;
  }
}

function ref(table: TableDefinition): string {
  return quoteIdent(table.name);
}

/** Claims `limit` rows with `lease` seconds from now. */
async function claimLeased(claimer: PostgresLeaseClaimer, limit: number, lease = 30) {
  const now = new Date();
  return claimer.claim({ limit, now, expiry: leaseExpiry(now, lease) });
}

describe("lease settleMany settles each row fenced by its own token, in one statement", () => {
  it("deletes every row that still holds its token, with tokens that differ between rows", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_many"), { lease: 30 }));
    const texts: string[] = [];
    const { driver, pool } = recordingDriver(texts);
    await publishRows(driver, table, 4);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const first = await claimLeased(claimer, 2, 30);
    const second = await claimLeased(claimer, 2, 60);
    const held = [...first, ...second].map(({ row, token }) => ({ id: row.id, token }));
    expect(new Set(held.map((hold) => hold.token.expiry.getTime())).size).toBe(2);
    texts.length = 0;
    expect(await claimer.settleMany({ rows: held, settlement: { kind: "delete" } })).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(texts).toHaveLength(1);
    expect(await db.rows(table)).toHaveLength(0);
    await claimer.close();
    await driver.close();
    await pool.end();
  });

  it("a row whose lease was taken over comes back false and unchanged, the others are settled", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_many"), { lease: 30 }));
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const claimed = await claimLeased(claimer, 3);
    const held = claimed.map(({ row, token }) => ({ id: row.id, token }));
    const stolen = held[1]?.id;
    await db.query(`UPDATE ${ref(table)} SET locked_until = locked_until + interval '1 hour' WHERE id = $1`, [
      stolen,
    ]);
    const before = await db.query(`SELECT * FROM ${ref(table)} WHERE id = $1`, [stolen]);
    expect(await claimer.settleMany({ rows: held, settlement: { kind: "delete" } })).toEqual([
      true,
      false,
      true,
    ]);
    expect(await db.rows(table)).toEqual(before);
    await claimer.close();
    await driver.close();
  });

  it("markProcessed writes processedAt and clears lockedUntil on the rows it settles, and only on them", async () => {
    const table = await db.create(
      describeTable("lease", uniqueName("rc_many"), {
        lease: 30,
        columns: {
          id: "id",
          payload: "payload",
          attempt: "attempt",
          lockedUntil: "locked_until",
          processedAt: "processed_at",
        },
      }),
    );
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = (await claimLeased(claimer, 3)).map(({ row, token }) => ({ id: row.id, token }));
    const stolen = held[0]?.id;
    await db.query(`UPDATE ${ref(table)} SET locked_until = now() + interval '1 hour' WHERE id = $1`, [
      stolen,
    ]);
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    expect(await claimer.settleMany({ rows: held, settlement: { kind: "markProcessed", at } })).toEqual([
      false,
      true,
      true,
    ]);
    const rows = await db.rows(table);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      if (String(row.id) === String(stolen)) {
        expect(row.processed_at).toBeNull();
        expect(row.locked_until).not.toBeNull();
      } else {
        expect((row.processed_at as Date).getTime()).toBe(at.getTime());
        expect(row.locked_until).toBeNull();
      }
    }
    await claimer.close();
    await driver.close();
  });

  it("a database error rejects with the error's code and changes no row", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_many"), { lease: 30 }));
    const guard = uniqueName("rc_many_ref");
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = (await claimLeased(claimer, 3)).map(({ row, token }) => ({ id: row.id, token }));
    // The last row is referenced from another table: deleting it breaks the foreign key.
    await db.query(
      `CREATE TABLE ${quoteIdent(guard)} (ref bigint REFERENCES ${ref(table)} (id) ON DELETE RESTRICT)`,
    );
    try {
      await db.query(`INSERT INTO ${quoteIdent(guard)} VALUES ($1)`, [held[2]?.id]);
      const before = await db.rows(table);
      expect(await codeOf(() => claimer.settleMany({ rows: held, settlement: { kind: "delete" } }))).toBe(
        "CONSTRAINT",
      );
      expect(await db.rows(table)).toEqual(before);
      await db.query(`DROP TABLE ${quoteIdent(guard)}`);
      // The table gone: the statement fails as a schema error.
      await db.query(`DROP TABLE ${ref(table)}`);
      expect(await codeOf(() => claimer.settleMany({ rows: held, settlement: { kind: "delete" } }))).toBe(
        "SCHEMA",
      );
    } finally {
      await db.query(`DROP TABLE IF EXISTS ${quoteIdent(guard)}`);
    }
    await claimer.close();
    await driver.close();
  });

  it("settles 500 rows in one call, one statement", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_many"), { lease: 30 }));
    const texts: string[] = [];
    const { driver, pool } = recordingDriver(texts);
    await publishRows(driver, table, 500);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = (await claimLeased(claimer, 500)).map(({ row, token }) => ({ id: row.id, token }));
    expect(held).toHaveLength(500);
    texts.length = 0;
    const settled = await claimer.settleMany({ rows: held, settlement: { kind: "delete" } });
    expect(settled.every((ok) => ok)).toBe(true);
    expect(settled).toHaveLength(500);
    expect(texts).toHaveLength(1);
    expect(await db.rows(table)).toHaveLength(0);
    await claimer.close();
    await driver.close();
    await pool.end();
  });

  it.each([
    ["text", "text PRIMARY KEY DEFAULT md5(random()::text)"],
    ["uuid", "uuid PRIMARY KEY DEFAULT gen_random_uuid()"],
  ])("works with %s ids", async (_type, idColumn) => {
    const table = defineTable({
      name: uniqueName("rc_many_ids"),
      columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
      lease: 30,
    });
    await db.query(
      `CREATE TABLE ${ref(table)} (id ${idColumn}, payload jsonb NOT NULL, attempt integer NOT NULL DEFAULT 1, locked_until timestamptz)`,
    );
    try {
      const driver = db.driver();
      await publishRows(driver, table, 3);
      const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
      const held = (await claimLeased(claimer, 3)).map(({ row, token }) => ({ id: row.id, token }));
      const other: LeaseToken = { form: "lease", expiry: new Date(Date.now() + 3_600_000) };
      const mixed = [held[0], { id: held[1]?.id ?? "", token: other }, held[2]].filter(
        (hold) => hold !== undefined,
      );
      expect(await claimer.settleMany({ rows: mixed, settlement: { kind: "delete" } })).toEqual([
        true,
        false,
        true,
      ]);
      expect((await db.rows(table)).map((row) => row.id)).toEqual([held[1]?.id]);
      await claimer.close();
      await driver.close();
    } finally {
      await db.query(`DROP TABLE IF EXISTS ${ref(table)}`);
    }
  });
});

describe("a row lock batch's end settles its acked rows in one statement, then commits", () => {
  it("deletes the rows with one statement and the commit", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_many")));
    const texts: string[] = [];
    const { driver, pool } = recordingDriver(texts);
    await publishRows(driver, table, 4);
    const claimer = await openClaimer<PostgresRowLockClaimer>(driver, table);
    const batch = await claimBatch(claimer, 3);
    expect(batch.rows).toHaveLength(3);
    texts.length = 0;
    await claimer.endBatch(batch.token, { rows: batch.rows, settlement: { kind: "delete" } });
    // The ack statement and the COMMIT.
    expect(texts).toHaveLength(2);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([3]);
    await claimer.close();
    await driver.close();
    await pool.end();
  });

  it("markProcessed counts the attempt, and a released batch keeps its rows unchanged", async () => {
    const table = await db.create(
      describeTable("rowLock", uniqueName("rc_many"), {
        columns: { id: "id", payload: "payload", attempt: "attempt", processedAt: "processed_at" },
      }),
    );
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresRowLockClaimer>(driver, table);
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    const rolled = await claimBatch(claimer, 3);
    await claimer.release(rolled.token);
    for (const row of await db.rows(table)) {
      expect(row.processed_at).toBeNull();
      expect(row.attempt).toBe(1);
    }
    const kept = await claimBatch(claimer, 3);
    await claimer.endBatch(kept.token, { rows: kept.rows, settlement: { kind: "markProcessed", at } });
    for (const row of await db.rows(table)) {
      expect((row.processed_at as Date).getTime()).toBe(at.getTime());
      expect(row.attempt).toBe(2);
    }
    await claimer.close();
    await driver.close();
  });

  it("works with text ids", async () => {
    const table = defineTable({ name: uniqueName("rc_many_ids"), columns: { id: "id", payload: "payload" } });
    await db.query(
      `CREATE TABLE ${ref(table)} (id text PRIMARY KEY DEFAULT md5(random()::text), payload jsonb NOT NULL)`,
    );
    try {
      const driver = db.driver();
      await publishRows(driver, table, 3);
      const claimer = await openClaimer<PostgresRowLockClaimer>(driver, table);
      const batch = await claimBatch(claimer, 2);
      await claimer.endBatch(batch.token, { rows: batch.rows, settlement: { kind: "delete" } });
      expect(await db.rows(table)).toHaveLength(1);
      await claimer.close();
      await driver.close();
    } finally {
      await db.query(`DROP TABLE IF EXISTS ${ref(table)}`);
    }
  });
});

describe("coalesced settlement statements find rows through the primary key", () => {
  it.each(["lease", "rowLock"] as const)(
    "the %s statement's generic plan scans the primary key",
    async (form) => {
      const name = uniqueName("rc_many_plan");
      const table = describeTable(form, name);
      const types = new Map([
        ["id", "bigint"],
        ["locked_until", "timestamp with time zone"],
      ]);
      const stmt =
        form === "lease" ? leaseSettleManySql(table, types).delete : rowLockSettleManySql(table).delete;
      const client = new pg.Client(db.url);
      await client.connect();
      try {
        await client.query("BEGIN");
        await db.create(table);
        await client.query(
          `INSERT INTO ${ref(table)} (payload) SELECT '{}'::jsonb FROM generate_series(1, 20000)`,
        );
        await client.query(`ANALYZE ${ref(table)}`);
        await client.query("SET LOCAL plan_cache_mode = force_generic_plan");
        await client.query(`PREPARE rc_many_plan AS ${stmt.text}`);
        const args = form === "lease" ? "'{1,2,3}', '{2020-01-01,2020-01-01,2020-01-01}'" : "'{1,2,3}'";
        const plan = await client.query(`EXPLAIN EXECUTE rc_many_plan(${args})`);
        const text = plan.rows.map((row) => String(row["QUERY PLAN"])).join("\n");
        expect(text).toContain(`Index Scan using ${name}_pkey`);
        expect(text).not.toContain("Seq Scan");
      } finally {
        await client.query("ROLLBACK");
        await client.end();
      }
    },
  );
});

describe("an advisory settlement unlocks its key in the same statement", () => {
  it("settles and unlocks in one statement: the row is gone and the key free", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_many")));
    const texts: string[] = [];
    const { driver, pool } = recordingDriver(texts);
    await publishRows(driver, table, 1);
    const claimer = await openClaimer<AdvisoryClaimer>(driver, table);
    const [claimed] = await claimer.claim({ limit: 1, now: new Date() });
    if (claimed === undefined) throw new Error("nothing claimed");
    texts.length = 0;
    await claimer.settle(claimed.token, claimed.row, { kind: "delete" });
    expect(texts).toHaveLength(1);
    expect(await db.rows(table)).toHaveLength(0);
    const [free] = await db.query(
      "SELECT pg_try_advisory_lock(hashtextextended($1::text, 0)) AS locked, pg_advisory_unlock(hashtextextended($1::text, 0)) AS unlocked",
      [claimed.token.key],
    );
    expect(free).toEqual({ locked: true, unlocked: true });
    await claimer.close();
    await driver.close();
    await pool.end();
  });

  it.each(["delete", "markProcessed"] as const)(
    "a %s settlement not yet committed when its key is unlocked is never taken by another session",
    async (kind) => {
      const table = await db.create(
        describeTable("advisory", uniqueName("rc_many"), {
          columns: {
            id: "id",
            payload: "payload",
            attempt: "attempt",
            processedAt: "processed_at",
          },
        }),
      );
      const gate = uniqueName("rc_gate");
      // A deferred trigger holds the settlement's commit until the test lets it go: it waits for
      // a lock the test holds. The key is unlocked by then (session advisory locks do not wait
      // for the commit), so another session can take the key while the settlement is uncommitted.
      await db.query(
        `CREATE FUNCTION ${quoteIdent(`${table.name}_gate`)}() RETURNS trigger LANGUAGE plpgsql AS $$ ` +
          `BEGIN PERFORM pg_advisory_xact_lock(hashtextextended('${gate}', 0)); RETURN NULL; END $$`,
      );
      await db.query(
        `CREATE CONSTRAINT TRIGGER rc_gate AFTER UPDATE OR DELETE ON ${ref(table)} ` +
          `DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${quoteIdent(`${table.name}_gate`)}()`,
      );
      const holder = await db.pool.connect();
      const settler = db.driver({ applicationName: uniqueName("rc_settler") });
      const takerName = uniqueName("rc_taker");
      const taker = db.driver({ applicationName: takerName });
      try {
        await publishRows(settler, table, 1);
        const first = await openClaimer<AdvisoryClaimer>(settler, table);
        const second = await openClaimer<AdvisoryClaimer>(taker, table);
        const [claimed] = await first.claim({ limit: 1, now: new Date() });
        if (claimed === undefined) throw new Error("nothing claimed");
        await holder.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [gate]);
        const settling = first.settle(
          claimed.token,
          claimed.row,
          kind === "delete" ? { kind } : { kind, at: new Date() },
        );
        // The settlement's statement has unlocked the key and waits at its commit.
        await waitFor(
          async () =>
            (
              await db.query(
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1::text, 0)",
                [claimed.token.key],
              )
            ).length === 0,
          { what: "the key to be unlocked before the commit" },
        );
        const taking = second.claim({ limit: 1, now: new Date() });
        // The other session took the key and now waits for the settlement's transaction.
        await waitFor(
          async () =>
            (
              await db.query(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                [takerName],
              )
            ).length > 0,
          { what: "the other session's take to wait for the row" },
        );
        await holder.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [gate]);
        await settling;
        expect(await taking).toEqual([]);
        const rows = await db.rows(table);
        if (kind === "delete") expect(rows).toHaveLength(0);
        else {
          expect(rows).toHaveLength(1);
          expect(rows[0]?.processed_at).not.toBeNull();
          expect(rows[0]?.attempt).toBe(2);
        }
        await first.close();
        await second.close();
      } finally {
        await holder.query("SELECT pg_advisory_unlock_all()").catch(() => undefined);
        holder.release();
        await settler.close();
        await taker.close();
        await db.query(`DROP TABLE IF EXISTS ${ref(table)}`);
        await db.query(`DROP FUNCTION IF EXISTS ${quoteIdent(`${table.name}_gate`)}()`);
      }
    },
  );
});
