// Transactional handlers on SQLite, beyond the conformance suite's: the body runs synchronously in
// an IMMEDIATE transaction on the driver's own handle, a body that returns a promise is rolled
// back and refused with INVALID_ARGUMENT (the row is then retried), and a dead-letter move made
// by a body's outcome is part of the transaction.
import {
  ack,
  BrokerError,
  createBroker,
  deadLetter,
  defineTable,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import type Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import { leaseTable, openConnection, tempDatabaseFile, uniqueName, waitFor } from "./support.js";

const temp = tempDatabaseFile();
let admin: Database.Database;

beforeAll(() => {
  admin = openConnection(temp.file);
});
afterAll(() => {
  admin.close();
  temp.remove();
});

/** A lease table and a side table `<name>_side (job, note)`, created on the admin connection. */
function tables(extra: Parameters<typeof leaseTable>[1] = {}): { table: TableDefinition; side: string } {
  const driver = createSqliteDriver({ database: admin });
  const table = defineTable(leaseTable(uniqueName("txh"), { lease: 5, ...extra }));
  admin.exec(driver.schemaSql(table));
  const side = `${table.name}_side`;
  admin.exec(`CREATE TABLE "${side}" (job TEXT NOT NULL, note TEXT NOT NULL)`);
  return { table, side };
}

function sideRows(side: string): { job: string; note: string }[] {
  return admin.prepare(`SELECT job, note FROM "${side}" ORDER BY rowid`).all() as {
    job: string;
    note: string;
  }[];
}

describe("a SQLite transactional body runs synchronously in an IMMEDIATE transaction on the driver's handle", () => {
  it("the body receives the driver's own database, inside a transaction, and its write commits with the ack", async () => {
    const { table, side } = tables();
    const driver = createSqliteDriver({ filename: temp.file });
    const broker = createBroker({ driver, logger: silentLogger });
    const seen: { same: boolean; inTransaction: boolean }[] = [];
    await broker.subscribe(
      table,
      (delivery) =>
        delivery.transaction((db) => {
          seen.push({ same: db === driver.database, inTransaction: db.inTransaction });
          db.prepare(`INSERT INTO "${side}" (job, note) VALUES (?, ?)`).run(
            String(delivery.payload),
            "acked",
          );
          return ack();
        }),
      { pollInterval: 20, transactional: true },
    );
    await broker.publish(table, "one");
    await waitFor(
      () => (admin.prepare(`SELECT count(*) AS n FROM "${table.name}"`).get() as { n: number }).n === 0,
    );
    expect(seen).toEqual([{ same: true, inTransaction: true }]);
    expect(sideRows(side)).toEqual([{ job: "one", note: "acked" }]);
    await broker.close();
  });
});

describe("a SQLite transactional body that returns a promise", () => {
  it("is rolled back and refused with INVALID_ARGUMENT, and the row is delivered again", async () => {
    const { table, side } = tables();
    const broker = createBroker({
      driver: createSqliteDriver({ filename: temp.file }),
      logger: silentLogger,
    });
    const errors: unknown[] = [];
    await broker.subscribe(
      table,
      async (delivery) => {
        try {
          if (delivery.attempt === 1) {
            await delivery.transaction(async (db) => {
              db.prepare(`INSERT INTO "${side}" (job, note) VALUES (?, ?)`).run("job", "async");
              return ack();
            });
          } else {
            await delivery.transaction((db) => {
              db.prepare(`INSERT INTO "${side}" (job, note) VALUES (?, ?)`).run("job", "sync");
              return ack();
            });
          }
        } catch (error) {
          errors.push(error);
          throw error;
        }
      },
      { pollInterval: 20, backoff: { baseMs: 10, maxMs: 10 }, transactional: true },
    );
    await broker.publish(table, "job");
    await waitFor(
      () => (admin.prepare(`SELECT count(*) AS n FROM "${table.name}"`).get() as { n: number }).n === 0,
    );
    expect(errors.map((error) => (BrokerError.is(error) ? error.code : String(error)))).toEqual([
      "INVALID_ARGUMENT",
    ]);
    expect(sideRows(side)).toEqual([{ job: "job", note: "sync" }]);
    await broker.close();
  });
});

describe("a SQLite transactional body's dead-letter outcome", () => {
  it("moves the row to the dead-letter table inside the body's transaction", async () => {
    const deadName = uniqueName("txh_dead");
    const { table, side } = tables({ deadLetter: { table: deadName }, maxAttempts: 3 });
    const driver = createSqliteDriver({ database: admin });
    admin.exec(driver.schemaSql(defineTable(leaseTable(deadName))));
    const broker = createBroker({
      driver: createSqliteDriver({ filename: temp.file }),
      logger: silentLogger,
    });
    await broker.subscribe(
      table,
      (delivery) =>
        delivery.transaction((db) => {
          db.prepare(`INSERT INTO "${side}" (job, note) VALUES (?, ?)`).run("job", "dead");
          return deadLetter();
        }),
      { pollInterval: 20, transactional: true },
    );
    await broker.publish(table, "job");
    await waitFor(
      () => (admin.prepare(`SELECT count(*) AS n FROM "${deadName}"`).get() as { n: number }).n === 1,
    );
    expect((admin.prepare(`SELECT count(*) AS n FROM "${table.name}"`).get() as { n: number }).n).toBe(0);
    expect(sideRows(side)).toEqual([{ job: "job", note: "dead" }]);
    await broker.close();
  });
});
