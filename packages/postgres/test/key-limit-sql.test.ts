// The statements of per-key limits (`advisoryLock: { key, limit }`): a limit of 1 builds exactly
// the statements of the string form (the claim path's cost unchanged), and a limit above 1 tries
// the row's own lock and each slot in one statement. Behaviour on the database is the conformance
// suite's "per-key limits" sub-suite.
import { defineTable } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { advisoryCandidatesSql, advisoryTakeSql, type ColumnTypes } from "../src/sql.js";

const columns = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" };
const types: ColumnTypes = new Map([
  ["id", "bigint"],
  ["payload", "jsonb"],
  ["attempt", "integer"],
  ["run_at", "timestamptz"],
  ["priority", "integer"],
  ["account", "text"],
]);
const described = (advisoryLock: string | { key: string; limit: number }) =>
  defineTable({ name: "jobs", columns, extraColumns: ["account"], advisoryLock });

describe("PostgreSQL per-key limit statements", () => {
  it("a limit of 1 builds the string form's candidates and take, text for text", () => {
    const plain = described("jobs-{account}");
    const one = described({ key: "jobs-{account}", limit: 1 });
    for (const exclusion of ["anySession", "listed"] as const) {
      expect(advisoryCandidatesSql(one, null, types, exclusion).forLimit(4).text).toBe(
        advisoryCandidatesSql(plain, null, types, exclusion).forLimit(4).text,
      );
    }
    expect(advisoryTakeSql(one, null, types).text).toBe(advisoryTakeSql(plain, null, types).text);
  });

  it("a limit of 3 tries the row's lock, then the three slots in order, in one statement", () => {
    const take = advisoryTakeSql(described({ key: "jobs-{account}", limit: 3 }), null, types).text;
    expect(take.match(/pg_try_advisory_lock/g)).toHaveLength(4);
    expect(take.indexOf("'#1'")).toBeLessThan(take.indexOf("'#2'"));
    expect(take.indexOf("'#2'")).toBeLessThan(take.indexOf("'#3'"));
    expect(take).toContain("pg_advisory_unlock");
  });

  it("a limit of 3 reads the first 3 rows of each key and passes over keys whose 3 slots are held", () => {
    const table = described({ key: "jobs-{account}", limit: 3 });
    expect(advisoryCandidatesSql(table, null, types, "listed").forLimit(4).text).toContain("rc_rank <= 3");
    expect(advisoryCandidatesSql(table, null, types, "anySession").forLimit(4).text).toContain(
      "generate_series(1, 3)",
    );
  });
});
