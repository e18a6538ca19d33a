// broker.schedule on the in-memory reference driver: what core refuses before it writes, and
// what the schedule loop publishes on a clock the test moves.
import { BrokerError, createBroker, defineTable, type TableDefinition } from "@rowclaim/core";
import { defineDriver } from "@rowclaim/core/driver";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryDriver, executeSql, MemoryDatabase, type MemoryDriver } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";

const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", runAt: "run_at", lockedUntil: "locked_until" },
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function setUp(options: { ledger?: boolean } = {}): { database: MemoryDatabase; driver: MemoryDriver } {
  const database = new MemoryDatabase();
  const driver = createMemoryDriver({ database });
  executeSql(database, driver.schemaSql(table));
  if (options.ledger !== false) executeSql(database, driver.scheduleLedger?.schemaSql(undefined) ?? "");
  return { database, driver };
}

async function refusal(attempt: () => Promise<unknown>): Promise<unknown> {
  try {
    await attempt();
  } catch (error) {
    return error;
  }
  throw new Error("expected a refusal");
}

function rowsOf(database: MemoryDatabase, of: TableDefinition = table): Record<string, unknown>[] {
  return database.rows(of);
}

describe("broker.schedule refuses what cannot work, before it writes", () => {
  it("a driver without a schedule ledger is refused with UNSUPPORTED_FORM", async () => {
    const { database, driver } = setUp();
    const { scheduleLedger: _, capabilities, ...rest } = driver;
    const without = defineDriver({ ...rest, capabilities: { ...capabilities, schedules: false } });
    const broker = createBroker({ driver: without });
    closers.push(() => broker.close());
    const error = await refusal(() => broker.schedule(table, "s", "* * * * *", {}));
    expect(BrokerError.is(error, "UNSUPPORTED_FORM")).toBe(true);
    expect(broker.schedules).toEqual([]);
    expect(rowsOf(database)).toEqual([]);
  });

  it("a missing ledger table is refused with SCHEMA naming it, and the name stays free", async () => {
    const { database, driver } = setUp({ ledger: false });
    const broker = createBroker({ driver });
    closers.push(() => broker.close());
    const error = await refusal(() => broker.schedule(table, "s", "* * * * *", {}));
    expect(BrokerError.is(error, "SCHEMA")).toBe(true);
    expect((error as Error).message).toContain("rowclaim_schedule_ticks");
    expect(broker.schedules).toEqual([]);
    executeSql(database, driver.scheduleLedger?.schemaSql(undefined) ?? "");
    await broker.schedule(table, "s", "0 0 1 1 *", {});
    expect(broker.schedules.map((schedule) => schedule.name)).toEqual(["s"]);
  });

  it("a payload the table's schema refuses is refused with DECLARATION", async () => {
    const { database, driver } = setUp();
    const strict = defineTable({
      ...table.description,
      payloadSchema: {
        "~standard": {
          version: 1,
          vendor: "test",
          validate: (value: unknown) =>
            typeof value === "number" ? { value } : { issues: [{ message: "not a number" }] },
        },
      },
    });
    const broker = createBroker({ driver });
    closers.push(() => broker.close());
    const error = await refusal(() =>
      broker.schedule(strict, "s", "* * * * * *", "text" as unknown as number),
    );
    expect(BrokerError.is(error, "DECLARATION")).toBe(true);
    expect(rowsOf(database)).toEqual([]);
  });
});

describe("the schedule loop on a clock the test moves", () => {
  it("publishes a daily 09:00 Europe/Berlin at 08:00 UTC before the spring-forward and 07:00 UTC after it, with runAt the tick", async () => {
    const { database, driver } = setUp();
    let now = Date.parse("2026-03-27T12:00:00Z");
    const broker = createBroker({ driver, clock: () => new Date(now) });
    closers.push(() => broker.close());
    const schedule = await broker.schedule(
      table,
      "morning",
      "0 9 * * *",
      (tick: Date) => tick.toISOString(),
      {
        timezone: "Europe/Berlin",
        // The clock jumps two days at once: ticks that late are published only within the backfill window.
        backfill: 3 * 24 * 3_600_000,
      },
    );
    expect(schedule.nextTick()?.toISOString()).toBe("2026-03-28T08:00:00.000Z");
    now = Date.parse("2026-03-29T12:00:00Z");
    await waitFor("two mornings", () => rowsOf(database).length === 2);
    const rows = rowsOf(database);
    expect(rows.map((row) => JSON.parse(String(row.payload)))).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
    ]);
    expect(rows.map((row) => (row.run_at as Date).toISOString())).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
    ]);
    expect(await driver.scheduleLedger?.list(table)).toEqual([
      { name: "morning", lastTick: new Date("2026-03-29T07:00:00.000Z"), ticks: 2 },
    ]);
  });

  it("a stopped schedule publishes nothing more and frees its name", async () => {
    const { database, driver } = setUp();
    let now = Date.parse("2030-01-01T00:00:30Z");
    const broker = createBroker({ driver, clock: () => new Date(now) });
    closers.push(() => broker.close());
    const schedule = await broker.schedule(table, "s", "* * * * *", 1);
    await schedule.stop();
    expect(broker.schedules).toEqual([]);
    now += 120_000;
    const again = await broker.schedule(table, "s", "* * * * *", 2);
    expect(again.nextTick()?.toISOString()).toBe("2030-01-01T00:03:00.000Z");
    expect(rowsOf(database)).toEqual([]);
  });
});
