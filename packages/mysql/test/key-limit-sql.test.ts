// The statements of per-key limits (`advisoryLock: { key, limit }`) on MySQL/MariaDB: a limit of 1
// builds exactly the string form's candidates (the claim path's cost unchanged); above 1, slot and
// row lock names follow the key names' rule (SHA-256 past 64 characters) and one statement tries
// the row's lock and each slot. Behaviour on the server is the conformance suite's "per-key
// limits" sub-suite.
import { createHash } from "node:crypto";
import { defineTable } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { lockNameOf, slotLockSql, TableStatements } from "../src/sql.js";

const columns = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority" };
const described = (advisoryLock: string | { key: string; limit: number }) =>
  defineTable({ name: "jobs", columns, extraColumns: ["account"], advisoryLock });

describe("MySQL per-key limit statements", () => {
  it("a limit of 1 builds the string form's candidates, text and values", () => {
    const now = new Date(0);
    const plain = new TableStatements(described("jobs-{account}"), null).advisoryCandidates(now, 7);
    const one = new TableStatements(described({ key: "jobs-{account}", limit: 1 }), null).advisoryCandidates(
      now,
      7,
    );
    expect(one).toEqual(plain);
  });

  it("a limit of 3 leaves out keys whose 3 slots are used and reads the full key", () => {
    const candidates = new TableStatements(
      described({ key: "jobs-{account}", limit: 3 }),
      null,
    ).advisoryCandidates(new Date(0), 7);
    expect(candidates.sql.match(/IS_USED_LOCK/g)).toHaveLength(3);
    expect(candidates.sql).toContain("`lock_key`");
  });

  it("the slot statement tries the row's lock, then each slot, never waiting", () => {
    const sql = slotLockSql(3);
    expect(sql.match(/GET_LOCK\(\?, 0\)/g)).toHaveLength(4);
  });

  it("a lock name past 64 characters is its SHA-256 in hex, as GET_LOCK names keys", () => {
    expect(lockNameOf("app.jobs-7#2")).toBe("app.jobs-7#2");
    const long = `app.${"k".repeat(70)}#1`;
    expect(lockNameOf(long)).toBe(createHash("sha256").update(long).digest("hex"));
  });
});
