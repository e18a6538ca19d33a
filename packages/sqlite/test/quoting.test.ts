import { ack, BrokerError, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver, quoteIdentifier } from "../src/index.js";
import { openConnection, tempDatabaseFile, uniqueName, waitFor } from "./support.js";

const temp = tempDatabaseFile();
afterAll(() => temp.remove());

describe("identifier quoting", () => {
  it("doubles embedded double quotes", () => {
    expect(quoteIdentifier('a"b')).toBe('"a""b"');
    expect(quoteIdentifier("plain")).toBe('"plain"');
  });

  it("refuses a name with a NUL character with DECLARATION", () => {
    let error: unknown;
    try {
      quoteIdentifier("a\u0000b");
    } catch (caught) {
      error = caught;
    }
    expect(BrokerError.is(error, "DECLARATION")).toBe(true);
  });

  it("a table and columns named with quotes, spaces and SQL work end to end in both forms, and nothing else runs", async () => {
    const db = openConnection(temp.file);
    db.exec('CREATE TABLE "canary" (x)');
    const hostile = `${uniqueName("q")} "; DROP TABLE canary; --`;
    const columns = {
      id: 'i"d',
      payload: "pay load",
      attempt: "att'empt",
      runAt: "run); DROP TABLE canary; --",
      priority: "[priority]",
      group: "`group`",
      processedAt: "select",
      headers: "h\"'",
    };
    const lease = defineTable({
      name: hostile,
      columns: { ...columns, lockedUntil: 'locked"until' },
      extraColumns: ["ac'count"],
      fifo: true,
      maxAttempts: 2,
      deadLetter: { group: "dead" },
    });
    const advisory = defineTable({
      name: `${hostile} adv`,
      columns,
      extraColumns: ["ac'count"],
      advisoryLock: `${hostile}-{ac'count}-'); DROP TABLE canary; --`,
    });
    const driver = createSqliteDriver({ filename: temp.file });
    db.exec(driver.schemaSql(lease));
    db.exec(driver.schemaSql(advisory));
    const broker = createBroker({ driver, logger: silentLogger });
    const seen: unknown[] = [];
    for (const table of [lease, advisory]) {
      await broker.subscribe(
        table,
        (delivery) => {
          seen.push([delivery.payload, delivery.attempt, delivery.headers]);
          return ack();
        },
        { group: "g", pollInterval: 10 },
      );
      await broker.publish(
        table,
        { t: table.form },
        { group: "g", priority: 1, headers: { k: "v" }, values: { "ac'count": 3 } },
      );
    }
    await waitFor(() => seen.length === 2);
    expect(seen).toContainEqual([{ t: "lease" }, 1, { k: "v" }]);
    expect(seen).toContainEqual([{ t: "advisory" }, 1, { k: "v" }]);
    await broker.close();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'canary'").all()).toEqual([
      { name: "canary" },
    ]);
    const processed = db.prepare(`SELECT "select" AS done FROM ${quoteIdentifier(hostile)}`).all() as {
      done: unknown;
    }[];
    expect(processed.map((row) => typeof row.done)).toEqual(["number"]);
    db.close();
  });
});
