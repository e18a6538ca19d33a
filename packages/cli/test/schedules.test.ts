import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createBroker, silentLogger } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { describe, expect, it } from "vitest";
import { standardTable } from "../src/tables.js";
import { scheduleExample } from "./examples/schedules.js";
import { runMain, tempDir } from "./support.js";

/** A SQLite file with a lease table `jobs`, the ledger (made by `schema --schedules --apply`) and two ticks of "nightly". */
async function databaseWithTicks(): Promise<{ dir: string; file: string }> {
  const dir = tempDir();
  const file = join(dir, "app.db");
  const made = await runMain(["schema", "--apply", "--schedules", "--url", file, "--table", "jobs"]);
  expect(made.code, made.stderr).toBe(0);
  expect(made.stdout).toContain("rowclaim_schedule_ticks");
  const table = standardTable({ name: "jobs", form: "lease" });
  let now = Date.parse("2031-01-01T02:30:00Z");
  const broker = createBroker({
    driver: createSqliteDriver({ filename: file }),
    logger: silentLogger,
    clock: () => new Date(now),
  });
  await broker.schedule(table, "nightly", "0 3 * * *", { kind: "report" }, { backfill: 3 * 86_400_000 });
  now = Date.parse("2031-01-02T03:30:00Z");
  const ledger = broker.driver.scheduleLedger;
  for (;;) {
    const [entry] = (await ledger?.list(table)) ?? [];
    if (entry?.ticks === 2) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await broker.close();
  return { dir, file };
}

describe("rowclaim schedules", () => {
  it("lists each schedule the ledger knows with its last tick", async () => {
    const { file } = await databaseWithTicks();
    const listed = await runMain(["schedules", "--url", file, "--table", "jobs"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/jobs\s+nightly\s+2031-01-02T03:00:00\.000Z\s+2/);
  });

  it("with a config module, prints the next ticks of declared schedules and marks undeclared ones", async () => {
    const { dir, file } = await databaseWithTicks();
    const config = join(dir, "rowclaim.config.mjs");
    writeFileSync(
      config,
      `export default {
  url: ${JSON.stringify(file)},
  tables: [{ name: "jobs", columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", priority: "priority", lockedUntil: "locked_until" } }],
  schedules: [{ table: "jobs", name: "hourly", cron: "0 * * * *", timezone: "Europe/Berlin" }],
};
`,
    );
    const listed = await runMain(["schedules", "--config", config, "--next", "2"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      /jobs\s+hourly\s+never\s+0\s+0 \* \* \* \* \(Europe\/Berlin\)\s+\S+:00:00\.000Z, \S+:00:00\.000Z/,
    );
    expect(listed.stdout).toMatch(
      /jobs\s+nightly\s+2031-01-02T03:00:00\.000Z\s+2\s+\(not declared in the config\)/,
    );
  });

  it("a database without the ledger fails naming it", async () => {
    const dir = tempDir();
    const file = join(dir, "empty.db");
    const made = await runMain(["schema", "--apply", "--url", file, "--table", "jobs"]);
    expect(made.code, made.stderr).toBe(0);
    const listed = await runMain(["schedules", "--url", file, "--table", "jobs"]);
    expect(listed.code).toBe(1);
    expect(listed.stderr).toContain("rowclaim_schedule_ticks");
  });
});

describe("the core README's schedule example", () => {
  it("publishes the nightly report at 03:00 Berlin time (01:00 UTC in summer), runAt the tick", async () => {
    const dir = tempDir();
    const file = join(dir, "example.db");
    const made = await runMain(["schema", "--apply", "--schedules", "--url", file, "--table", "reports"]);
    expect(made.code, made.stderr).toBe(0);
    let now = Date.parse("2031-07-01T00:30:00Z");
    const driver = createSqliteDriver({ filename: file });
    const broker = createBroker({ driver, logger: silentLogger, clock: () => new Date(now) });
    try {
      const nightly = await scheduleExample(broker, "reports");
      expect(nightly.nextTick()?.toISOString()).toBe("2031-07-01T01:00:00.000Z");
      now = Date.parse("2031-07-01T01:00:05Z");
      const rows = (): Record<string, unknown>[] =>
        driver.database.prepare('SELECT payload, run_at FROM "reports"').all() as Record<string, unknown>[];
      for (;;) {
        if (rows().length === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(rows()).toEqual([
        { payload: '{"day":"2031-07-01"}', run_at: Date.parse("2031-07-01T01:00:00Z") },
      ]);
    } finally {
      await broker.close();
    }
  });
});
