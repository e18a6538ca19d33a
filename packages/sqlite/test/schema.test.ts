import {
  BrokerError,
  createBroker,
  defineTable,
  SchemaError,
  silentLogger,
  type TableDescription,
} from "@rowclaim/core";
import type Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqliteDriver, schemaSql } from "../src/index.js";
import { compareVersions } from "../src/schema-check.js";
import { leaseTable, openConnection, tempDatabaseFile, uniqueName } from "./support.js";

const temp = tempDatabaseFile();
let db: Database.Database;

beforeAll(() => {
  db = openConnection(temp.file);
});
afterAll(() => {
  db.close();
  temp.remove();
});

async function openError(description: TableDescription): Promise<unknown> {
  const driver = createSqliteDriver({ filename: temp.file });
  try {
    await driver.open(defineTable(description), { group: null, logger: silentLogger });
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await driver.close();
  }
}

describe("schemaSql", () => {
  it("creates a table with every role, typed for its payload, and the claim-order index", () => {
    const t = defineTable({
      ...leaseTable(uniqueName("schema")),
      payloadType: "bytes",
      extraColumns: ["account"],
    });
    db.exec(schemaSql(t));
    db.exec(schemaSql(t));
    const columns = db.prepare("SELECT name, type, dflt_value, pk FROM pragma_table_info(?)").all(t.name);
    expect(columns).toEqual([
      { name: "id", type: "INTEGER", dflt_value: null, pk: 1 },
      { name: "payload", type: "BLOB", dflt_value: null, pk: 0 },
      { name: "attempt", type: "INTEGER", dflt_value: "1", pk: 0 },
      { name: "run_at", type: "INTEGER", dflt_value: null, pk: 0 },
      { name: "priority", type: "INTEGER", dflt_value: "0", pk: 0 },
      { name: "queue", type: "TEXT", dflt_value: null, pk: 0 },
      { name: "locked_until", type: "INTEGER", dflt_value: null, pk: 0 },
      { name: "headers", type: "TEXT", dflt_value: null, pk: 0 },
      { name: "account", type: "", dflt_value: null, pk: 0 },
    ]);
    const indexed = db.prepare("SELECT name FROM pragma_index_info(?)").all(`${t.name}_claim_order`);
    expect(indexed).toEqual([{ name: "queue" }, { name: "priority" }, { name: "run_at" }, { name: "id" }]);
  });

  it("indexes only the claim-order columns the table has, and none for a bare table", () => {
    const bare = defineTable({
      name: uniqueName("bare"),
      columns: { id: "id", payload: "body" },
      payloadType: "text",
      advisoryLock: "k",
    });
    const sql = schemaSql(bare);
    expect(sql).not.toContain("CREATE INDEX");
    db.exec(sql);
    expect(db.prepare("SELECT name, type FROM pragma_table_info(?)").all(bare.name)).toEqual([
      { name: "id", type: "INTEGER" },
      { name: "body", type: "TEXT" },
    ]);
  });
});

describe("open() checks the table", () => {
  it("a missing table fails with SCHEMA naming the table and the statement", async () => {
    const error = await openError(leaseTable(uniqueName("missing")));
    expect(BrokerError.is(error, "SCHEMA")).toBe(true);
    expect((error as SchemaError).statement).toContain("UPDATE");
    expect((error as SchemaError).table).toMatch(/^missing_/);
  });

  it("a missing column fails with SCHEMA naming the column and a statement that needs it", async () => {
    const name = uniqueName("nocol");
    db.exec(
      `CREATE TABLE "${name}" (id INTEGER PRIMARY KEY, payload TEXT, attempt INTEGER DEFAULT 1, locked_until INTEGER)`,
    );
    const error = await openError({
      name,
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        lockedUntil: "locked_until",
        processedAt: "done_at",
      },
    });
    expect(error).toBeInstanceOf(SchemaError);
    expect((error as SchemaError).column).toBe("done_at");
    expect((error as SchemaError).statement).toContain('"done_at"');
  });

  it("a missing dead-letter table fails with SCHEMA", async () => {
    const t = defineTable(
      leaseTable(uniqueName("dl"), { maxAttempts: 2, deadLetter: { table: uniqueName("nowhere") } }),
    );
    db.exec(schemaSql(t));
    const error = await openError(t.description);
    expect(BrokerError.is(error, "SCHEMA")).toBe(true);
    expect((error as SchemaError).statement).toContain("INSERT INTO");
  });

  it("a schema that is not attached fails with SCHEMA", async () => {
    const error = await openError(leaseTable(uniqueName("s"), { schema: "not_attached" }));
    expect(BrokerError.is(error, "SCHEMA")).toBe(true);
  });

  it("a row lock table is refused with UNSUPPORTED_FORM by the broker and by open() itself", async () => {
    const t = defineTable({ name: uniqueName("rowlock"), columns: { id: "id", payload: "payload" } });
    const error = await openError(t.description);
    expect(BrokerError.is(error, "UNSUPPORTED_FORM")).toBe(true);
    const driver = createSqliteDriver({ filename: temp.file });
    expect(driver.capabilities.forms).toEqual(["lease", "advisory"]);
    const broker = createBroker({ driver, logger: silentLogger });
    await expect(broker.subscribe(t, () => undefined)).rejects.toMatchObject({ code: "UNSUPPORTED_FORM" });
    await broker.close();
  });

  it("a mode the table names runs its claims; isolation levels are refused", async () => {
    const t = defineTable(leaseTable(uniqueName("mode"), { mode: "exclusive" }));
    db.exec(schemaSql(t));
    const driver = createSqliteDriver({ filename: temp.file });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.publish(t, 1);
    let seen = 0;
    await broker.subscribe(t, () => {
      seen += 1;
    });
    const isolated = defineTable(leaseTable(uniqueName("iso"), { isolation: "serializable" }));
    await expect(broker.subscribe(isolated, () => undefined)).rejects.toMatchObject({ code: "DECLARATION" });
    await new Promise<void>((resolve) => {
      const check = (): void => (seen === 1 ? resolve() : void setTimeout(check, 10));
      check();
    });
    await broker.close();
  });
});

describe("version floor", () => {
  it("compares versions numerically", () => {
    expect(compareVersions("3.53.2", "3.35.0")).toBeGreaterThan(0);
    expect(compareVersions("3.9.0", "3.35.0")).toBeLessThan(0);
    expect(compareVersions("3.35", "3.35.0")).toBe(0);
  });
});
