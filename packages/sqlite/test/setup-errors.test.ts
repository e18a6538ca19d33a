/**
 * Mistakes made when setting the driver up, and a publish on a connection outside a transaction:
 * each is refused with a stable code and a message naming the fix.
 */
import { createBroker, defineTable, silentLogger } from "@rowclaim/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver, type SqliteDriverOptions } from "../src/index.js";
import { leaseTable, openConnection, tempDatabaseFile, uniqueName } from "./support.js";

describe("createSqliteDriver refuses options it does not take", () => {
  it("an unknown key fails with INVALID_ARGUMENT", () => {
    const options = { filename: ":memory:", busyTimout: 100 } as unknown as SqliteDriverOptions;
    expect(() => createSqliteDriver(options)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("an unknown key beside a database fails with INVALID_ARGUMENT", () => {
    const database = new Database(":memory:");
    try {
      const options = { database, synchronus: "normal" } as unknown as SqliteDriverOptions;
      expect(() => createSqliteDriver(options)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
    } finally {
      database.close();
    }
  });
});

describe("createSqliteDriver refuses a file in a folder that does not exist", () => {
  it("fails with INVALID_ARGUMENT naming the folder, not better-sqlite3's TypeError", () => {
    expect(() => createSqliteDriver({ filename: "/no-such-dir-rowclaim/x.db" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("publish inside the caller's transaction checks the transaction", () => {
  const temp = tempDatabaseFile();
  afterAll(() => temp.remove());

  it("a Database outside a transaction, or closed, is refused with INVALID_ARGUMENT and writes nothing", async () => {
    const driver = createSqliteDriver({ filename: temp.file });
    const table = defineTable(leaseTable(uniqueName("notx")));
    driver.database.exec(driver.schemaSql(table));
    const broker = createBroker({ driver, logger: silentLogger });
    const client = openConnection(temp.file);
    try {
      await expect(broker.publish(table, 1, { client })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      client.close();
      await expect(broker.publish(table, 2, { client })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      const count = driver.database.prepare(`SELECT COUNT(*) AS n FROM "${table.name}"`).get() as {
        n: number;
      };
      expect(count.n).toBe(0);
    } finally {
      if (client.open) client.close();
      await broker.close();
    }
  });
});
