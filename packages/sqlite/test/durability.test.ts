/**
 * How a driver that opens its own file sets `synchronous`, and that it leaves a user's Database
 * as it is.
 */
import { BrokerError } from "@rowclaim/core";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver, type SqliteDriverOptions } from "../src/index.js";
import { openConnection, tempDatabaseFile, uniqueName } from "./support.js";

const temp = tempDatabaseFile("rowclaim-sqlite-durability-");
const dir = temp.file.slice(0, -"queue.db".length);

afterAll(() => {
  temp.remove();
});

/** SQLite's `synchronous` levels as `PRAGMA synchronous` reads them. */
const FULL = 2;
const NORMAL = 1;

async function synchronousOf(options: SqliteDriverOptions): Promise<number> {
  const driver = createSqliteDriver(options);
  try {
    return driver.database.pragma("synchronous", { simple: true }) as number;
  } finally {
    await driver.close();
  }
}

describe("synchronous on a file the driver opens", () => {
  it("is FULL every time without the option, on a new file and once it is in WAL mode (where better-sqlite3 alone would open it with NORMAL)", async () => {
    const filename = `${dir}${uniqueName("default")}.db`;
    expect(await synchronousOf({ filename })).toBe(FULL);
    expect(await synchronousOf({ filename })).toBe(FULL);
  });

  it('is FULL every time with synchronous: "full"', async () => {
    const filename = `${dir}${uniqueName("full")}.db`;
    expect(await synchronousOf({ filename, synchronous: "full" })).toBe(FULL);
    // The file is in WAL mode now: better-sqlite3 alone would open it with NORMAL.
    expect(await synchronousOf({ filename, synchronous: "full" })).toBe(FULL);
  });

  it('is NORMAL when the user chooses synchronous: "normal"', async () => {
    const filename = `${dir}${uniqueName("normal")}.db`;
    expect(await synchronousOf({ filename, synchronous: "normal" })).toBe(NORMAL);
    expect(await synchronousOf({ filename, synchronous: "normal" })).toBe(NORMAL);
  });

  it("refuses any other level with INVALID_ARGUMENT", () => {
    const filename = `${dir}${uniqueName("other")}.db`;
    let failure: unknown;
    try {
      createSqliteDriver({ filename, synchronous: "off" as "full" });
    } catch (error) {
      failure = error;
    }
    expect(BrokerError.is(failure, "INVALID_ARGUMENT")).toBe(true);
  });

  it("leaves the pragmas of a Database the user gives alone", async () => {
    const database = openConnection(temp.file);
    try {
      database.pragma("synchronous = OFF");
      const driver = createSqliteDriver({ database });
      await driver.close();
      expect(database.pragma("synchronous", { simple: true })).toBe(0);
      expect(database.pragma("journal_mode", { simple: true })).toBe("wal");
    } finally {
      database.close();
    }
  });
});
