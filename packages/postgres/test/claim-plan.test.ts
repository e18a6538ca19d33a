import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaSql } from "../src/index.js";
import {
  advisoryCandidatesSql,
  advisoryKeyValues,
  type ClaimStatement,
  type ColumnTypes,
  LITERAL_LIMIT_MAX,
  leaseClaimSql,
  leaseClaimWithAcksSql,
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

/** Creates a queue of 5,000 due rows inside the open transaction and runs `work` on it. */
async function withQueue<T>(
  form: "rowLock" | "lease" | "advisory",
  group: string | null,
  work: (name: string, values: (stmt: Statement) => unknown[]) => Promise<T>,
  limit = 4,
): Promise<T> {
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
    const expiry = new Date(Date.now() + 30_000);
    const values = (stmt: Statement): unknown[] =>
      statementValues(stmt, {
        now: new Date(),
        expiry,
        // The held rows of a claim that carries acks: as arrays, and as one id and token.
        ids: ["1"],
        tokens: [expiry.toISOString()],
        id: "1",
        token: expiry,
        group,
        limit,
        window: 200,
        held: ["held-key"],
        ...advisoryKeyValues(table),
      });
    return await work(name, values);
  } finally {
    await client.query("ROLLBACK");
  }
}

/** The plan PostgreSQL picks for `stmt` on a queue of 5,000 due rows (rolled back, nothing kept). */
async function plan(
  form: "rowLock" | "lease" | "advisory",
  build: (name: string) => Statement,
  group: string | null,
  limit = 4,
) {
  return withQueue(
    form,
    group,
    async (name, values) => {
      const stmt = build(name);
      const result = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${stmt.text}`, values(stmt));
      return result.rows.map((row) => row["QUERY PLAN"]).join("\n");
    },
    limit,
  );
}

/**
 * Runs the claim of `limit` rows as a prepared statement ten times on one connection (rolled
 * back), as a busy subscription does, and reports how the server planned it: how many runs
 * reused its generic plan, and that generic plan.
 */
async function keptPlan(
  form: "rowLock" | "lease" | "advisory",
  build: (name: string) => ClaimStatement,
  group: string | null,
  limit: number,
) {
  return withQueue(form, group, async (name, values) => {
    const stmt = build(name).forLimit(limit);
    const prepared = `rc_kept_${Math.random().toString(36).slice(2, 10)}`;
    for (let run = 0; run < 10; run += 1) {
      await client.query("SAVEPOINT rc_run");
      await client.query({ name: prepared, text: stmt.text, values: values(stmt) });
      await client.query("ROLLBACK TO SAVEPOINT rc_run");
    }
    const counts = await client.query<{ generic_plans: string }>(
      "SELECT generic_plans FROM pg_prepared_statements WHERE name = $1",
      [prepared],
    );
    // The plan the server reuses: EXPLAIN of the same prepared statement, forced to its generic plan.
    await client.query("SET LOCAL plan_cache_mode = force_generic_plan");
    const args = values(stmt).map((value) => {
      if (value === null) return "NULL";
      const text =
        value instanceof Date
          ? value.toISOString()
          : Array.isArray(value)
            ? `{${value.join(",")}}`
            : String(value);
      return `'${text.replaceAll("'", "''")}'`;
    });
    const explained = await client.query<{ "QUERY PLAN": string }>(
      `EXPLAIN EXECUTE "${prepared}"${args.length === 0 ? "" : `(${args.join(", ")})`}`,
    );
    return {
      genericRuns: Number(counts.rows[0]?.generic_plans ?? 0),
      generic: explained.rows.map((row) => row["QUERY PLAN"]).join("\n"),
    };
  });
}

describe("claims read the claim-order index in order instead of sorting the due rows", () => {
  for (const group of [null, "emails"]) {
    const which = group === null ? "rows without a group" : "a named group";
    it(`the row lock claim, for ${which}`, async () => {
      const text = await plan(
        "rowLock",
        (name) => rowLockClaimSql(describeTable("rowLock", name), group, types).general,
        group,
      );
      expect(text).toContain("claim_order");
      expect(text).not.toMatch(/\bSort\b/);
    });
    it(`the lease claim, for ${which}`, async () => {
      const text = await plan(
        "lease",
        (name) => leaseClaimSql(describeTable("lease", name), group, types).general,
        group,
      );
      expect(text).toContain("claim_order");
      expect(text).not.toMatch(/\bSort\b/);
    });
    it(`the advisory candidate select reads the index for its window, for ${which}`, async () => {
      const text = await plan(
        "advisory",
        (name) => advisoryCandidatesSql(describeTable("advisory", name), group, types).general,
        group,
      );
      expect(text).toContain("claim_order");
    });
    it(`the advisory candidate select passing over listed keys reads the index and no lock table, for ${which}`, async () => {
      const text = await plan(
        "advisory",
        (name) => advisoryCandidatesSql(describeTable("advisory", name), group, types, "listed").general,
        group,
      );
      expect(text).toContain("claim_order");
      expect(text).not.toContain("pg_lock_status");
    });
  }
});

describe("a lease claim of many rows finds the rows it locked through the primary key", () => {
  // Joined to its locked ids, a claim of 500 rows was planned as a hash join over the whole table.
  const claims = {
    "the lease claim": (name: string) => leaseClaimSql(describeTable("lease", name), null, types).general,
    "the lease claim carrying acks": (name: string) =>
      leaseClaimWithAcksSql(describeTable("lease", name), null, types).delete.general,
  };
  for (const [label, build] of Object.entries(claims)) {
    it(`${label} of 500 rows`, async () => {
      const text = await plan("lease", build, null, 500);
      expect(text).toMatch(/Index Cond: \(id = ANY/);
      expect(text).not.toMatch(/Seq Scan on rc_plan/);
      expect(text).not.toContain("Hash Join");
    });
  }
});

describe("a lease claim carrying acks passes over the acked rows by one hash lookup a row", () => {
  // `<> ALL($ids)` compared every candidate row with every acked id: with 250 acks, three quarters
  // of the claim's time in the server.
  it("in its generic plan, the acked ids are a hashed subplan", async () => {
    const kept = await keptPlan(
      "lease",
      (name) => leaseClaimWithAcksSql(describeTable("lease", name), null, types).delete,
      null,
      8,
    );
    expect(kept.generic).toContain("hashed SubPlan");
    expect(kept.generic).not.toContain("<> ALL");
  });
});

describe("claims of up to LITERAL_LIMIT_MAX rows keep one plan instead of being planned on every run", () => {
  const claims = {
    "row lock claim": {
      form: "rowLock",
      build: (name: string, group: string | null) =>
        rowLockClaimSql(describeTable("rowLock", name), group, types),
    },
    "lease claim": {
      form: "lease",
      build: (name: string, group: string | null) =>
        leaseClaimSql(describeTable("lease", name), group, types),
    },
    "lease claim carrying one ack": {
      form: "lease",
      build: (name: string, group: string | null) =>
        leaseClaimWithAcksSql(describeTable("lease", name), group, types, "one").delete,
    },
    "advisory candidate select": {
      form: "advisory",
      build: (name: string, group: string | null) =>
        advisoryCandidatesSql(describeTable("advisory", name), group, types),
    },
    "advisory candidate select passing over listed keys": {
      form: "advisory",
      build: (name: string, group: string | null) =>
        advisoryCandidatesSql(describeTable("advisory", name), group, types, "listed"),
    },
  } as const;
  for (const [label, claim] of Object.entries(claims)) {
    for (const limit of [1, 8]) {
      it(`the ${label} of ${limit} row${limit === 1 ? "" : "s"} reuses its generic plan, which reads the claim-order index and no whole table`, async () => {
        const kept = await keptPlan(claim.form, (name) => claim.build(name, null), null, limit);
        expect(kept.genericRuns).toBeGreaterThan(0);
        expect(kept.generic).toContain("claim_order");
        expect(kept.generic).not.toMatch(/Seq Scan on rc_plan/);
        // (An advisory claim sorts its window's few rows by key, to keep one row per key; a claim
        // carrying acks puts its few claimed rows in the order it numbered them.)
        if (claim.form !== "advisory") expect(kept.generic).not.toMatch(/Sort Key: (?!\(row_number\(\))/);
      });
    }
  }

  it("carries the limit as a parameter above LITERAL_LIMIT_MAX, and as a literal up to it", () => {
    const claim = leaseClaimSql(describeTable("lease", "rc_limits"), null, types);
    expect(claim.general.params).toContain("limit");
    expect(claim.forLimit(LITERAL_LIMIT_MAX).params).not.toContain("limit");
    expect(claim.forLimit(LITERAL_LIMIT_MAX).text).toContain(`LIMIT ${LITERAL_LIMIT_MAX} `);
    expect(claim.forLimit(LITERAL_LIMIT_MAX + 1)).toBe(claim.general);
    expect(claim.forLimit(3)).toBe(claim.forLimit(3));
    expect(claim.forLimit(3).name).not.toBe(claim.forLimit(4).name);
  });
});

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
