import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaSql } from "../src/index.js";
import {
  advisoryCandidatesSql,
  advisoryKeyValues,
  type ColumnTypes,
  leaseClaimSql,
  rowLockClaimSql,
  type Statement,
  statementValues,
} from "../src/sql.js";
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
  ["account", "text"],
]);

/** The plan PostgreSQL picks for `stmt` on a queue of 5,000 due rows (rolled back, nothing kept). */
async function plan(
  form: "rowLock" | "lease" | "advisory",
  build: (name: string) => Statement,
  group: string | null,
) {
  const name = uniqueName("rc_plan");
  const table = describeTable(form, name);
  await client.query("BEGIN");
  try {
    await client.query(schemaSql(table));
    await client.query(
      `INSERT INTO "${name}" (payload, run_at, queue${form === "advisory" ? ", account" : ""})
       SELECT '{}'::jsonb, now() - interval '1 hour' + g * interval '1 ms', $1${form === "advisory" ? ", (g % 50)::text" : ""}
       FROM generate_series(1, 5000) AS g`,
      [group],
    );
    await client.query(`ANALYZE "${name}"`);
    const stmt = build(name);
    const values = statementValues(stmt, {
      now: new Date(),
      expiry: new Date(Date.now() + 30_000),
      group,
      limit: 4,
      window: 200,
      held: ["held-key"],
      ...advisoryKeyValues(table),
    });
    const result = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${stmt.text}`, values);
    return result.rows.map((row) => row["QUERY PLAN"]).join("\n");
  } finally {
    await client.query("ROLLBACK");
  }
}

describe("claims read the claim-order index in order instead of sorting the due rows", () => {
  for (const group of [null, "emails"]) {
    const which = group === null ? "rows without a group" : "a named group";
    it(`the row lock claim, for ${which}`, async () => {
      const text = await plan(
        "rowLock",
        (name) => rowLockClaimSql(describeTable("rowLock", name), group, types),
        group,
      );
      expect(text).toContain("claim_order");
      expect(text).not.toMatch(/\bSort\b/);
    });
    it(`the lease claim, for ${which}`, async () => {
      const text = await plan(
        "lease",
        (name) => leaseClaimSql(describeTable("lease", name), group, types),
        group,
      );
      expect(text).toContain("claim_order");
      expect(text).not.toMatch(/\bSort\b/);
    });
    it(`the advisory candidate select reads the index for its window, for ${which}`, async () => {
      const text = await plan(
        "advisory",
        (name) => advisoryCandidatesSql(describeTable("advisory", name), group),
        group,
      );
      expect(text).toContain("claim_order");
    });
    it(`the advisory candidate select passing over listed keys reads the index and no lock table, for ${which}`, async () => {
      const text = await plan(
        "advisory",
        (name) => advisoryCandidatesSql(describeTable("advisory", name), group, "listed"),
        group,
      );
      expect(text).toContain("claim_order");
      expect(text).not.toContain("pg_lock_status");
    });
  }
});
