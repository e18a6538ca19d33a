import { describe, expect, it } from "vitest";
import { type ControlStatements, ControlTable } from "../src/control-table.js";

/** Control statements over a table that exists or not, recording what ran. */
function scripted(): { statements: ControlStatements; ran: string[]; exists: { value: boolean } } {
  const ran: string[] = [];
  const exists = { value: false };
  const rows = new Map<string, boolean>();
  const statements: ControlStatements = {
    async present() {
      ran.push("present");
      return exists.value;
    },
    async read() {
      ran.push("read");
      if (!exists.value) return undefined;
      return [...rows].map(([scope, paused]) => ({ scope, paused: paused ? 1 : 0, rate_count: 0 }));
    },
    async setPaused(_table, scope, paused) {
      ran.push("setPaused");
      rows.set(scope, paused);
    },
    async takeRate(_table, _scope, take) {
      ran.push("takeRate");
      return take.want;
    },
    async returnRate() {
      ran.push("returnRate");
    },
    async create() {
      ran.push("create");
      exists.value = true;
    },
    schemaSql: "CREATE TABLE rowclaim_controls ()",
  };
  return { statements, ran, exists };
}

describe("ControlTable", () => {
  it("reads nothing, and creates nothing, while the control table does not exist", async () => {
    const { statements, ran } = scripted();
    const store = new ControlTable(statements);
    expect(await store.read("jobs")).toEqual([]);
    expect(ran).toEqual(["present"]);
  });

  it("creates the table before the first pause, then reads it without looking for it again", async () => {
    const { statements, ran } = scripted();
    const store = new ControlTable(statements);
    await store.setPaused("jobs", "*", true);
    await store.setPaused("jobs", "a", false);
    const read = await store.read("jobs");
    expect(read.map((row) => [row.scope, row.paused])).toEqual([
      ["*", true],
      ["a", false],
    ]);
    expect(ran).toEqual(["create", "setPaused", "setPaused", "read"]);
  });

  it("reads a table dropped meanwhile as nothing paused, and looks for it again next time", async () => {
    const { statements, ran, exists } = scripted();
    const store = new ControlTable(statements);
    await store.ensure();
    exists.value = false;
    expect(await store.read("jobs")).toEqual([]);
    expect(await store.read("jobs")).toEqual([]);
    expect(ran).toEqual(["create", "read", "present"]);
  });

  it("hands rate takes and give-backs to the statements, and returns their schema text", async () => {
    const { statements, ran } = scripted();
    const store = new ControlTable(statements);
    expect(await store.takeRate("jobs", "*", { window: 1, limit: 5, want: 3, intervalMs: 1000 })).toBe(3);
    await store.returnRate("jobs", "*", 1, 2);
    expect(ran).toEqual(["takeRate", "returnRate"]);
    expect(store.schemaSql()).toBe("CREATE TABLE rowclaim_controls ()");
  });
});
