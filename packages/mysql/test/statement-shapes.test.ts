/**
 * The shape of the statements the hot paths run, against the real server: lock functions answer
 * under one fixed column name whatever the key (mysql2 compiles one row parser per distinct
 * column set, so a name per key would compile one per key), and a lease claim runs no read-back.
 */
import { createBroker, silentLogger } from "@rowclaim/core";
import { type LeaseClaimer, leaseExpiry } from "@rowclaim/core/driver";
import { createPool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { createMysqlDriver, ownPoolOptions } from "../src/index.js";
import { lockSql } from "../src/sql.js";
import { mysqlUrl, recordingPool, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture(4);

describe("lock function selects answer under one column name for every key", () => {
  it("GET_LOCK, RELEASE_LOCK and IS_USED_LOCK name their column the same for two keys", async () => {
    const connection = await db.admin.getConnection();
    try {
      const prefix = uniqueName("alias");
      for (const sql of [lockSql.get, lockSql.usedBy, lockSql.release]) {
        const names = new Set<string>();
        for (const key of [`${prefix}-a`, `${prefix}-b`]) {
          const [, fields] = await connection.query({ sql, values: [key], rowsAsArray: true });
          names.add((fields as { name: string }[])[0]?.name ?? "");
        }
        expect([...names]).toHaveLength(1);
      }
    } finally {
      connection.release();
    }
  });
});

describe("a lease claim does not read its rows back", () => {
  it("claims two rows with one select, one update and the commit, and reports attempt and expiry as a read-back would", async () => {
    const name = uniqueName("shape");
    const table = await db.tables.create({
      name,
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        runAt: "run_at",
        lockedUntil: "locked_until",
      },
    });
    const statements: string[] = [];
    const pool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 2 });
    pool.on("connection", (connection) => {
      connection.query("SET time_zone = '+00:00'");
    });
    const driver = createMysqlDriver({ pool: recordingPool(pool, statements) });
    try {
      const broker = createBroker({ driver: db.driver, logger: silentLogger });
      await broker.publish(table, { n: 1 });
      await broker.publish(table, { n: 2 });
      const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
      statements.length = 0;
      const now = new Date();
      const expiry = leaseExpiry(now, 30);
      const claimed = await claimer.claim({ limit: 2, now, expiry });
      expect(claimed.map((c) => c.row.payload)).toEqual([{ n: 1 }, { n: 2 }]);
      for (const { row } of claimed) {
        expect(row.attempt).toBe(1);
        expect(row.row.attempt).toBe(2);
        expect((row.row.locked_until as Date).getTime()).toBe(expiry.getTime());
      }
      const selects = statements.filter((sql) => sql.startsWith("SELECT"));
      expect(selects).toHaveLength(1);
      expect(statements.filter((sql) => sql.startsWith("UPDATE"))).toHaveLength(1);
      await claimer.close();
    } finally {
      await driver.close();
      await pool.end();
    }
  });
});
