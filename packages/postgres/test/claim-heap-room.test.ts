import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaSql } from "../src/index.js";
import { type ColumnTypes, leaseClaimSql, statementValues } from "../src/sql.js";
import { describeTable, testUrl, uniqueName } from "./helpers.js";

let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client(await testUrl());
  await client.connect();
});

afterAll(async () => {
  await client.end();
});

const types: ColumnTypes = new Map([
  ["id", "bigint"],
  ["payload", "jsonb"],
  ["attempt", "integer"],
  ["run_at", "timestamp with time zone"],
  ["priority", "integer"],
  ["queue", "text"],
  ["locked_until", "timestamp with time zone"],
]);

/** The table's storage options (`pg_class.reloptions`), in the open transaction. */
async function storageOptions(name: string): Promise<readonly string[]> {
  const result = await client.query<{ reloptions: string[] | null }>(
    "SELECT reloptions FROM pg_class WHERE oid = $1::regclass",
    [`"${name}"`],
  );
  return result.rows[0]?.reloptions ?? [];
}

describe("the recommended table leaves room on each page for the version a claim writes", () => {
  it("makes a lease claim a heap-only update: no index entry is written for a claimed row", async () => {
    const name = uniqueName("rc_room");
    const table = describeTable("lease", name);
    const rows = 2000;
    await client.query("BEGIN");
    try {
      await client.query(schemaSql(table));
      await client.query(
        `INSERT INTO "${name}" (payload, run_at, queue) SELECT '{"n":1}'::jsonb, now() - interval '1 hour', NULL FROM generate_series(1, $1::int)`,
        [rows],
      );
      const stmt = leaseClaimSql(table, null, types).forLimit(rows);
      const claimed = await client.query(
        stmt.text,
        statementValues(stmt, {
          now: new Date(),
          expiry: new Date(Date.now() + 30_000),
          group: null,
          limit: rows,
        }),
      );
      expect(claimed.rowCount).toBe(rows);
      // Counted in this transaction, so read at once: updates that wrote no index entry.
      const hot = await client.query<{ updated: string; hot: string }>(
        `SELECT pg_stat_get_xact_tuples_updated($1::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated($1::regclass) AS hot`,
        [`"${name}"`],
      );
      expect(Number(hot.rows[0]?.updated)).toBe(rows);
      // Every row, but a page whose last free bytes could not hold one more.
      expect(Number(hot.rows[0]?.hot)).toBeGreaterThanOrEqual(rows * 0.99);
    } finally {
      await client.query("ROLLBACK");
    }
  });

  it("sets the room as the table's fillfactor for the lease and advisory forms, whose claims rewrite the row", async () => {
    await client.query("BEGIN");
    try {
      for (const form of ["lease", "advisory"] as const) {
        const name = uniqueName("rc_room");
        await client.query(schemaSql(describeTable(form, name)));
        expect(await storageOptions(name)).toEqual(["fillfactor=45"]);
      }
    } finally {
      await client.query("ROLLBACK");
    }
  });

  it("keeps PostgreSQL's default fill for the row lock form, whose claim only locks the row", async () => {
    await client.query("BEGIN");
    try {
      const name = uniqueName("rc_room");
      await client.query(schemaSql(describeTable("rowLock", name)));
      expect(await storageOptions(name)).toEqual([]);
    } finally {
      await client.query("ROLLBACK");
    }
  });
});
