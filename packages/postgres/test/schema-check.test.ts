import { BrokerError, createBroker, type Delivery, defineTable, silentLogger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quoteIdent } from "../src/index.js";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
const schemas: string[] = [];
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  for (const schema of schemas) await db.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await db.close();
});

describe("a table in a named schema", () => {
  it("is found there, not on the search_path, and claims work", async () => {
    const schema = uniqueName("rc_schema");
    schemas.push(schema);
    await db.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    const table = await db.create(describeTable("lease", uniqueName("rc_in_schema"), { schema }));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const seen: Delivery[] = [];
    await broker.subscribe(table, (delivery) => {
      seen.push(delivery);
    });
    await broker.publish(table, { n: 1 });
    await waitFor(() => seen.length === 1, { what: "the delivery" });
    await broker.close();
    // The same name without the schema is not on the search_path.
    const unqualified = describeTable("lease", table.name);
    const other = createBroker({ driver: db.driver(), logger: silentLogger });
    const failure = await other.subscribe(unqualified, () => undefined).catch((error: unknown) => error);
    expect(BrokerError.is(failure, "SCHEMA")).toBe(true);
    await other.close();
  });
});

describe("startup checks", () => {
  it("a missing column fails with a SchemaError naming the table, the column and the statement", async () => {
    const name = uniqueName("rc_missing_col");
    await db.create(describeTable("rowLock", name));
    const table = describeTable("rowLock", name, {
      columns: { id: "id", payload: "payload", headers: "hdrs" },
    });
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const failure = await broker.subscribe(table, () => undefined).catch((error: unknown) => error);
    expect(failure).toMatchObject({
      code: "SCHEMA",
      table: name,
      column: "hdrs",
      statement: "row lock claim",
    });
    await broker.close();
  });

  it("a column whose type the statements cannot use fails with a SchemaError naming the statement", async () => {
    const name = uniqueName("rc_bad_type");
    const table = defineTable({ name, columns: { id: "id", payload: "payload", attempt: "attempt" } });
    await db.query(
      `CREATE TABLE ${quoteIdent(name)} (id bigserial PRIMARY KEY, payload jsonb NOT NULL, attempt text NOT NULL DEFAULT '1')`,
    );
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const failure = await broker.subscribe(table, () => undefined).catch((error: unknown) => error);
    await db.query(`DROP TABLE ${quoteIdent(name)}`);
    expect(failure).toMatchObject({ code: "SCHEMA", table: name });
    expect((failure as { statement?: string }).statement).toMatch(/settlement/);
    await broker.close();
  });

  it("a dead-letter table missing a column fails with a SchemaError naming it", async () => {
    const name = uniqueName("rc_dlq_src");
    const dead = uniqueName("rc_dlq");
    await db.create(describeTable("rowLock", name));
    await db.query(`CREATE TABLE ${quoteIdent(dead)} (id bigserial PRIMARY KEY, payload jsonb)`);
    const table = describeTable("rowLock", name, { maxAttempts: 3, deadLetter: { table: dead } });
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const failure = await broker.subscribe(table, () => undefined).catch((error: unknown) => error);
    await db.query(`DROP TABLE ${quoteIdent(dead)}`);
    expect(failure).toMatchObject({ code: "SCHEMA", table: dead, column: "attempt" });
    await broker.close();
  });
});
