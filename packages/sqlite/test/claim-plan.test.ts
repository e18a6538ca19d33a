/**
 * Claims read the claim-order index from its head and stop at their limit: never two index
 * searches merged and sorted again (SQLite's "MULTI-INDEX OR" for the due condition
 * `(runAt IS NULL OR runAt <= now)`, which it picks for a literal `group IS NULL`), never a
 * temporary B-tree for the order.
 */
import { defineTable, type TableDefinition } from "@rowclaim/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { schemaSql } from "../src/index.js";
import {
  advisoryCandidatesSql,
  advisoryKeySql,
  advisoryTakeSql,
  leaseClaimSql,
  quoteColumns,
} from "../src/sql.js";
import { claimColumns, leaseTable, tempDatabaseFile } from "./support.js";

const temp = tempDatabaseFile();
const db = new Database(temp.file);
afterAll(() => {
  db.close();
  temp.remove();
});

/** Creates `table` with 5,000 due rows (distinct publish times, 50 accounts) and gathers statistics. */
function fill(table: TableDefinition): void {
  db.exec(schemaSql(table));
  const insert = db.prepare(
    `INSERT INTO "${table.name}" (payload, run_at, priority${table.advisoryKey === undefined ? "" : ", account"}) VALUES (?, ?, 0${table.advisoryKey === undefined ? "" : ", ?"})`,
  );
  const start = Date.now() - 3_600_000;
  db.transaction(() => {
    for (let n = 0; n < 5000; n += 1) {
      if (table.advisoryKey === undefined) insert.run("{}", start + n);
      else insert.run("{}", start + n, String(n % 50));
    }
  })();
  db.exec(`ANALYZE "${table.name}"`);
}

/** An advisory table keyed by account, filled as {@link fill} fills it. */
function filledAdvisoryTable(name: string): TableDefinition {
  const table = defineTable({
    name,
    columns: { ...claimColumns },
    extraColumns: ["account"],
    advisoryLock: `${name}-{account}`,
  });
  fill(table);
  return table;
}

/** The plan SQLite picks for `sql`, one step a line. */
function plan(sql: string, values: Record<string, unknown>): string {
  const steps = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(values) as { detail: string }[];
  return steps.map((step) => step.detail).join("\n");
}

describe("claims read the claim-order index in order instead of sorting the due rows", () => {
  it("the lease claim", () => {
    const table = defineTable(leaseTable("plan_lease"));
    fill(table);
    const columns = quoteColumns(table) as ReturnType<typeof quoteColumns> & { lockedUntil: string };
    const text = plan(leaseClaimSql(columns, 4), {
      now: Date.now(),
      expiry: Date.now() + 30_000,
      group: null,
    });
    expect(text).toContain("plan_lease_claim_order");
    expect(text).not.toContain("MULTI-INDEX OR");
    expect(text).not.toContain("TEMP B-TREE");
  });

  it("the advisory candidate select", () => {
    const table = filledAdvisoryTable("plan_advisory");
    const key = advisoryKeySql(table);
    const text = plan(advisoryCandidatesSql(quoteColumns(table), key.sql, 4), {
      ...key.literals,
      now: Date.now(),
      group: null,
      held: "[]",
    });
    expect(text).toContain("plan_advisory_claim_order");
    expect(text).not.toContain("MULTI-INDEX OR");
    expect(text).not.toContain("TEMP B-TREE");
  });

  it("the advisory take still finds its row by id", () => {
    const table = filledAdvisoryTable("plan_take");
    const text = plan(advisoryTakeSql(quoteColumns(table)), { id: 7, now: Date.now(), group: null });
    expect(text).toMatch(/USING INTEGER PRIMARY KEY|USING PRIMARY KEY/);
  });
});
