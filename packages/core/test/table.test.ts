import { describe, expect, it } from "vitest";
import { BrokerError, defineTable, type TableDescription } from "../src/index.js";

const base = { name: "jobs", columns: { id: "id", payload: "payload" } } as const;

function refusal(description: unknown): BrokerError {
  try {
    defineTable(description as TableDescription);
  } catch (error) {
    if (BrokerError.is(error)) return error;
    throw error;
  }
  throw new Error("defineTable accepted the description");
}

describe("a table's form follows its description", () => {
  it("a table with no form set takes the row lock form", () => {
    expect(defineTable(base).form).toBe("rowLock");
  });
  it("a lockedUntil column selects the lease form, with a 30 s lease unless set", () => {
    const table = defineTable({ ...base, columns: { ...base.columns, lockedUntil: "locked_until" } });
    expect(table.form).toBe("lease");
    expect(table.leaseSeconds).toBe(30);
  });
  it("advisoryLock selects the advisory lock form and parses its key", () => {
    const table = defineTable({ ...base, extraColumns: ["account"], advisoryLock: "accounts-{account}" });
    expect(table.form).toBe("advisory");
    expect(table.advisoryKey?.parts).toEqual([{ literal: "accounts-" }, { column: "account" }]);
  });
  it("a key may name a role's column and mix literals and placeholders", () => {
    const table = defineTable({
      ...base,
      columns: { ...base.columns, group: "queue" },
      advisoryLock: "{queue}:{id}!",
    });
    expect(table.advisoryKey?.parts).toEqual([
      { column: "queue" },
      { literal: ":" },
      { column: "id" },
      { literal: "!" },
    ]);
  });
  it("a lease is whole seconds, rounded up", () => {
    const table = defineTable({ ...base, columns: { ...base.columns, lockedUntil: "lu" }, lease: 1.2 });
    expect(table.leaseSeconds).toBe(2);
  });
  it("the definition lists every described column, roles first", () => {
    const table = defineTable({
      ...base,
      columns: { ...base.columns, attempt: "attempt", runAt: "run_at" },
      extraColumns: ["account"],
    });
    expect(table.allColumns).toEqual(["id", "payload", "attempt", "run_at", "account"]);
    expect(Object.isFrozen(table)).toBe(true);
  });
});

describe("a description that cannot work is refused with DECLARATION", () => {
  const cases: [string, unknown][] = [
    [
      "both lockedUntil and advisoryLock",
      { ...base, columns: { ...base.columns, lockedUntil: "lu" }, advisoryLock: "{id}" },
    ],
    ["a placeholder naming no column", { ...base, advisoryLock: "accounts-{account}" }],
    ["an unclosed placeholder", { ...base, advisoryLock: "accounts-{id" }],
    ["an empty placeholder", { ...base, advisoryLock: "accounts-{}" }],
    ["a stray closing brace", { ...base, advisoryLock: "accounts}-{id}" }],
    [
      "fifo beside advisoryLock",
      { ...base, columns: { ...base.columns, group: "g" }, advisoryLock: "{g}", fifo: true },
    ],
    ["fifo without a group column", { ...base, fifo: true }],
    [
      "maxAttempts without deadLetter",
      { ...base, columns: { ...base.columns, attempt: "attempt" }, maxAttempts: 3 },
    ],
    [
      "deadLetter without maxAttempts",
      { ...base, columns: { ...base.columns, attempt: "attempt" }, deadLetter: { table: "dead" } },
    ],
    ["maxAttempts without an attempt column", { ...base, maxAttempts: 3, deadLetter: { table: "dead" } }],
    [
      "a dead-letter group without a group column",
      { ...base, columns: { ...base.columns, attempt: "a" }, maxAttempts: 3, deadLetter: { group: "dead" } },
    ],
    [
      "a deadLetter naming both a group and a table",
      {
        ...base,
        columns: { ...base.columns, attempt: "a", group: "g" },
        maxAttempts: 3,
        deadLetter: { group: "d", table: "t" },
      },
    ],
    [
      "maxAttempts of zero",
      { ...base, columns: { ...base.columns, attempt: "a" }, maxAttempts: 0, deadLetter: { table: "d" } },
    ],
    ["a lease under one second", { ...base, columns: { ...base.columns, lockedUntil: "lu" }, lease: 0.5 }],
    [
      "a lease that is not a number",
      { ...base, columns: { ...base.columns, lockedUntil: "lu" }, lease: "30" },
    ],
    ["a lease on a table without lockedUntil", { ...base, lease: 10 }],
    ["a missing id column", { name: "jobs", columns: { payload: "p" } }],
    ["a missing payload column", { name: "jobs", columns: { id: "id" } }],
    ["a missing name", { columns: { id: "id", payload: "p" } }],
    ["one column for two roles", { ...base, columns: { id: "id", payload: "id" } }],
    ["an unknown role", { ...base, columns: { ...base.columns, body: "body" } }],
    ["an unknown payload type", { ...base, payloadType: "xml" }],
    ["an unknown isolation level", { ...base, isolation: "snapshot" }],
    ["an unknown mode", { ...base, mode: "eager" }],
    ["an extra column that also plays a role", { ...base, extraColumns: ["payload"] }],
  ];
  it.each(cases)("refuses %s", (_, description) => {
    const error = refusal(description);
    expect(error.code).toBe("DECLARATION");
  });

  it("names the table in the refusal", () => {
    const error = refusal({ ...base, fifo: true });
    expect(error.table).toBe("jobs");
  });
});
