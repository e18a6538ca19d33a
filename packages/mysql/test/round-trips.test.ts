/**
 * Round trips the hot paths save, against the real server: the driver's own pool sets READ
 * COMMITTED once per session, so a claim runs no `SET TRANSACTION` of its own (a pool the user
 * owns keeps its sessions' defaults and still gets one a claim); an advisory delete releases its
 * lock in the same statement, and only once it holds the row's write lock.
 */
import { silentLogger, type TableDefinition } from "@rowclaim/core";
import {
  type AdvisoryClaimer,
  type AdvisoryToken,
  type LeaseClaimer,
  leaseExpiry,
} from "@rowclaim/core/driver";
import { createPool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { createMysqlDriver, type MysqlDriver, ownPoolOptions } from "../src/index.js";
import type { PoolLike, QueryOptionsLike } from "../src/pool-like.js";
import {
  leaseColumns,
  mysqlUrl,
  quote,
  readAll,
  recordingPool,
  uniqueName,
  useMysqlFixture,
  waitFor,
} from "./support.js";

const db = useMysqlFixture(4);

/** `SET` statements the session of a one-connection pool has run so far. */
async function setStatements(pool: PoolLike): Promise<number> {
  const [rows] = await pool.query({ sql: "SHOW SESSION STATUS LIKE 'Com_set_option'", rowsAsArray: true });
  return Number((rows as unknown[][])[0]?.[1]);
}

/** A lease claim of two rows: the locking claim's transaction (a one-row claim runs none). */
async function claimTwo(claimer: LeaseClaimer): Promise<void> {
  const now = new Date();
  const claimed = await claimer.claim({ limit: 2, now, expiry: leaseExpiry(now, 30) });
  expect(claimed).toHaveLength(2);
}

async function leaseTable(rows: number): Promise<TableDefinition> {
  const table = await db.tables.create({ name: uniqueName("rt"), columns: leaseColumns });
  await db.admin.query(
    `INSERT INTO ${quote(table.name)} (payload) VALUES ${Array.from({ length: rows }, () => "('1')").join(", ")}`,
  );
  return table;
}

describe("claims on the driver's own pool set the isolation level once per session", () => {
  it("three claims on one session run no SET statement; the same claims on a pool the user owns run one each", async () => {
    const table = await leaseTable(16);
    const own = createMysqlDriver({ url: await mysqlUrl(), connectionLimit: 1 });
    const userPool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 1 });
    const user: MysqlDriver = createMysqlDriver({ pool: userPool });
    try {
      for (const [driver, perClaim] of [
        [own, 0],
        [user, 1],
      ] as const) {
        const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
        await claimTwo(claimer);
        const before = await setStatements(driver.pool);
        for (let n = 0; n < 3; n += 1) await claimTwo(claimer);
        expect(await setStatements(driver.pool)).toBe(before + 3 * perClaim);
        await claimer.close();
      }
    } finally {
      await own.close();
      await user.close();
      await userPool.end();
    }
  });
});

async function usedBy(name: string): Promise<unknown> {
  const [rows] = await db.admin.query("SELECT IS_USED_LOCK(?) AS holder", [name]);
  return (rows as { holder: unknown }[])[0]?.holder;
}

/** The row lock wait of session `thread`'s transaction, if it waits for one. */
async function lockWaitOf(thread: number): Promise<string | undefined> {
  const [rows] = await db.admin.query(
    "SELECT trx_requested_lock_id AS lock_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'",
    [thread],
  );
  const lock = (rows as { lock_id: unknown }[])[0]?.lock_id;
  return lock === undefined || lock === null ? undefined : String(lock);
}

/** What session `thread` runs and its state, for a failure's message. */
async function sessionState(thread: number): Promise<string> {
  const [rows] = await db.admin.query(
    "SELECT COMMAND AS command, STATE AS state, INFO AS info FROM information_schema.PROCESSLIST WHERE ID = ?",
    [thread],
  );
  return JSON.stringify((rows as unknown[])[0] ?? "no such session");
}

describe("an advisory delete releases its lock in the same statement, once it holds the row", () => {
  it("one statement settles and unlocks; while another transaction holds the row, the lock stays held", async () => {
    const name = uniqueName("rt_adv");
    const table = await db.tables.create({
      name,
      columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" },
      advisoryLock: `${name}:{id}`,
    });
    await db.admin.query(`INSERT INTO ${quote(name)} (payload) VALUES ('1'), ('2')`);
    const statements: string[] = [];
    const pool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 4 });
    const driver = createMysqlDriver({ pool: recordingPool(pool, statements) });
    const blocker = await db.admin.getConnection();
    try {
      const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as AdvisoryClaimer;
      const claimed = await claimer.claim({ limit: 2, now: new Date() });
      expect(claimed).toHaveLength(2);
      const [first, second] = claimed as [
        { row: (typeof claimed)[number]["row"]; token: AdvisoryToken },
        { row: (typeof claimed)[number]["row"]; token: AdvisoryToken },
      ];

      // Settled at once: one statement, no RELEASE_LOCK of its own, the lock free, the row gone.
      statements.length = 0;
      await claimer.settle(first.token, first.row, { kind: "delete" });
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/^DELETE .*RELEASE_LOCK/);
      expect(await usedBy(first.token.key)).toBeNull();

      // Another transaction holds the second row: the delete waits for it without unlocking.
      const holder = Number(await usedBy(second.token.key));
      await blocker.query("START TRANSACTION");
      await blocker.query(`SELECT id FROM ${quote(name)} WHERE id = ? FOR UPDATE`, [second.row.id]);
      let outcome: string | undefined;
      const settling = claimer.settle(second.token, second.row, { kind: "delete" }).then(
        () => {
          outcome = "settled";
        },
        (error: unknown) => {
          outcome = `failed (${String(error)})`;
          throw error;
        },
      );
      settling.catch(() => undefined);
      await waitFor(
        async () => {
          if (outcome !== undefined) throw new Error(`The delete did not wait for the row: it ${outcome}.`);
          return (await lockWaitOf(holder)) !== undefined;
        },
        30_000,
        "the delete to wait for the row",
      ).catch(async (error: unknown) => {
        throw new Error(`${String(error)} The lock's session: ${await sessionState(holder)}.`);
      });
      expect(await usedBy(second.token.key)).not.toBeNull();
      await blocker.query("COMMIT");
      await settling;
      expect(await usedBy(second.token.key)).toBeNull();
      expect(await readAll(db.admin, table)).toEqual([]);
      await claimer.close();
    } finally {
      await blocker.query("ROLLBACK").catch(() => undefined);
      blocker.release();
      await driver.close();
      await pool.end();
    }
  });

  it("a row deleted by hand while held: LEASE_LOST, and the lock is given back", async () => {
    const name = uniqueName("rt_gone");
    const table = await db.tables.create({
      name,
      columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" },
      advisoryLock: `${name}:{id}`,
    });
    await db.admin.query(`INSERT INTO ${quote(name)} (payload) VALUES ('1')`);
    const claimer = (await db.driver.open(table, { group: null, logger: silentLogger })) as AdvisoryClaimer;
    const [claimed] = await claimer.claim({ limit: 1, now: new Date() });
    if (claimed === undefined) throw new Error("nothing claimed");
    await db.admin.query(`DELETE FROM ${quote(name)}`);
    await expect(claimer.settle(claimed.token, claimed.row, { kind: "delete" })).rejects.toMatchObject({
      code: "LEASE_LOST",
    });
    expect(await usedBy(claimed.token.key)).toBeNull();
    await claimer.close();
  });
});

describe("a one-row lease claim runs two autocommitted statements, and exactly one claim takes a row", () => {
  it("one candidate read and one guarded update, no transaction", async () => {
    const table = await leaseTable(3);
    const statements: string[] = [];
    const pool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 2 });
    const driver = createMysqlDriver({ pool: recordingPool(pool, statements) });
    try {
      const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
      statements.length = 0;
      const now = new Date();
      const expiry = leaseExpiry(now, 30);
      const [claimed] = await claimer.claim({ limit: 1, now, expiry });
      expect(statements.map((sql) => sql.split(" ")[0])).toEqual(["SELECT", "UPDATE"]);
      expect(claimed?.row.attempt).toBe(1);
      expect(claimed?.row.row.locked_until).toEqual(expiry);
      const [row] = await readAll(db.admin, table);
      expect(row?.attempt).toBe(2);
      expect(row?.locked_until).toEqual(expiry);
      await claimer.close();
    } finally {
      await driver.close();
      await pool.end();
    }
  });

  it("a candidate that changed after the read (another claim and a retry came between) is passed over", async () => {
    const table = await leaseTable(2);
    const statements: string[] = [];
    const pool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 2 });
    const recording = recordingPool(pool, statements);
    let interfere = true;
    // Right after the candidate read, another claim takes row 1 and gives it back (attempt 2, free).
    const driver = createMysqlDriver({
      pool: {
        ...recording,
        async getConnection() {
          const connection = await recording.getConnection();
          return {
            get threadId() {
              return connection.threadId;
            },
            async query(statement: QueryOptionsLike | string, values?: unknown[]) {
              const result =
                typeof statement === "string"
                  ? await connection.query(statement, values)
                  : await connection.query(statement);
              const sql = typeof statement === "string" ? statement : statement.sql;
              if (interfere && sql.startsWith("SELECT") && sql.includes("LIMIT ?")) {
                interfere = false;
                await db.admin.query(`UPDATE ${quote(table.name)} SET attempt = attempt + 1 WHERE id = 1`);
              }
              return result;
            },
            release: () => connection.release(),
            destroy: () => connection.destroy(),
          };
        },
      },
    });
    try {
      const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
      const now = new Date();
      const [claimed] = await claimer.claim({ limit: 1, now, expiry: leaseExpiry(now, 30) });
      expect(interfere).toBe(false);
      expect(claimed?.row.id).toBe(2);
      const rows = await readAll(db.admin, table);
      expect(rows.map((row) => [row.id, row.attempt, row.locked_until === null])).toEqual([
        [1, 2, true],
        [2, 2, false],
      ]);
      await claimer.close();
    } finally {
      await driver.close();
      await pool.end();
    }
  });

  it("four claimers racing over 40 rows take each row exactly once", async () => {
    const table = await leaseTable(40);
    const drivers = await Promise.all(
      Array.from({ length: 4 }, async () => createMysqlDriver({ url: await mysqlUrl(), connectionLimit: 2 })),
    );
    try {
      const taken: unknown[] = [];
      await Promise.all(
        drivers.map(async (driver) => {
          const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
          for (;;) {
            const now = new Date();
            const claimed = await claimer.claim({ limit: 1, now, expiry: leaseExpiry(now, 30) });
            if (claimed.length === 0) break;
            taken.push(...claimed.map((c) => c.row.id));
          }
          await claimer.close();
        }),
      );
      expect(taken).toHaveLength(40);
      expect(new Set(taken).size).toBe(40);
    } finally {
      await Promise.all(drivers.map((driver) => driver.close()));
    }
  });
});
