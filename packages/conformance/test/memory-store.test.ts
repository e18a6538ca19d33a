// The memory database's own rules: the statements it runs (and refuses), its constraints, and its
// locks, which the reference driver and the conformance harness build on.
import { BrokerError, defineTable } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { createMemoryDriver, executeSql, MemoryDatabase } from "../src/memory/index.js";

const odd = defineTable({
  name: `we"ird ; drop table x;--`,
  columns: { id: `i"d`, payload: "pay load", attempt: "at'tempt" },
  extraColumns: ["account"],
});

function created(): MemoryDatabase {
  const database = new MemoryDatabase();
  executeSql(database, createMemoryDriver({ database }).schemaSql(odd));
  return database;
}

describe("executeSql", () => {
  it("creates the table schemaSql describes, quoted names and column defaults included", async () => {
    const database = created();
    const driver = createMemoryDriver({ database });
    await driver.publish(
      odd,
      [{ payload: "1", group: null, runAt: null, priority: null, headers: null, values: {} }],
      {},
    );
    expect(database.rows(odd)).toEqual([{ 'i"d': 1, "pay load": "1", "at'tempt": 1, account: null }]);
  });

  it("runs DELETE and UPDATE with a WHERE of equalities, and DROP TABLE", () => {
    const database = new MemoryDatabase();
    executeSql(database, "CREATE TABLE t (id serial PRIMARY KEY, v text, n integer DEFAULT 0)");
    const data = database.table("t");
    for (const v of ["a", "b", "c"]) data?.rows.set(String(data.rows.size + 1), data.newRow({ v }));
    executeSql(database, "UPDATE t SET v = NULL, n = 7 WHERE id = 2; DELETE FROM t WHERE v = 'a'");
    expect(data?.snapshot()).toEqual([
      { id: 2, v: null, n: 7 },
      { id: 3, v: "c", n: 0 },
    ]);
    executeSql(database, "DROP TABLE t");
    expect(database.table("t")).toBeUndefined();
    expect(() => executeSql(database, "DROP TABLE t")).toThrow(/does not exist/);
  });

  it("refuses a statement it does not run", () => {
    expect(() => executeSql(new MemoryDatabase(), "SELECT 1")).toThrow(/runs only/);
  });
});

describe("constraints", () => {
  it("a unique index refuses a second publish of the same value with CONSTRAINT and writes neither row of the call", async () => {
    const database = created();
    executeSql(database, `CREATE UNIQUE INDEX acct ON "we""ird ; drop table x;--" (account)`);
    const driver = createMemoryDriver({ database });
    const row = (account: string) => ({
      payload: "x",
      group: null,
      runAt: null,
      priority: null,
      headers: null,
      values: { account },
    });
    const error = await driver.publish(odd, [row("a"), row("a")], {}).catch((caught: unknown) => caught);
    expect(BrokerError.is(error, "CONSTRAINT")).toBe(true);
    expect(database.rows(odd)).toEqual([]);
  });
});

describe("locks", () => {
  it("a row lock and an advisory key have one holder at a time", () => {
    const database = created();
    const table = database.tableOf(odd);
    if (table === undefined) throw new Error("no table");
    const first = {};
    const second = {};
    expect(database.lockRow(table, "1", first)).toBe(true);
    expect(database.lockRow(table, "1", second)).toBe(false);
    database.unlockRow(table, "1", first);
    expect(database.lockRow(table, "1", second)).toBe(true);
    expect(database.tryKey("k", first)).toBe(true);
    expect(database.tryKey("k", second)).toBe(false);
    expect(database.unlockKey("k", second)).toBe(false);
    expect(database.unlockKey("k", first)).toBe(true);
    expect(database.keyHeld("k")).toBe(false);
  });
});
