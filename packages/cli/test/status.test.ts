import { join } from "node:path";
import { createBroker, type Delivery, silentLogger } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { describe, expect, it } from "vitest";
import { openAdminConnection } from "../src/admin-connection.js";
import { dropTableSql } from "../src/admin-sql.js";
import { createDriver } from "../src/connect.js";
import { standardTable } from "../src/tables.js";
import { parseTarget, type Target } from "../src/target.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

interface StatusJson {
  table: string;
  columns: Record<string, string>;
  groups: {
    group: string | null;
    total: number;
    due: number;
    leased: number;
    scheduled: number;
    processed: number;
  }[];
}

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * Fills a lease table with 2 rows in work (held by handlers that wait), 3 due, 4 scheduled an
 * hour ahead, 1 processed and 2 in group "other", runs `status --json` on it, and lets go.
 */
async function statusOfBusyTable(target: Target, url: string): Promise<StatusJson> {
  const name = uniquePrefix("status");
  const table = standardTable({ name, form: "lease", processedAt: true, lease: 60 });
  const admin = await openAdminConnection(target);
  const driver = await createDriver(target);
  const broker = createBroker({ driver, logger: silentLogger });
  const releases: (() => void)[] = [];
  try {
    await admin.execute(dropTableSql(target.dialect, name));
    await admin.execute(driver.schemaSql(table));
    // One row to process first, so that one is marked processed.
    await broker.publish(table, { step: "processed" });
    let acked = 0;
    const first = await broker.subscribe(table, () => {
      acked += 1;
    });
    await waitUntil(() => acked === 1);
    await first.stop();
    const later = new Date(Date.now() + 3_600_000);
    await broker.publishMany(table, [
      ...Array.from({ length: 5 }, (_, n) => ({ payload: { step: "due", n } })),
      ...Array.from({ length: 4 }, (_, n) => ({ payload: { step: "scheduled", n }, runAt: later })),
      ...Array.from({ length: 2 }, (_, n) => ({ payload: { step: "other", n }, group: "other" })),
    ]);
    const held = await broker.subscribe(
      table,
      (_delivery: Delivery) => new Promise<void>((resolve) => releases.push(resolve)),
      { workers: 2 },
    );
    await waitUntil(() => releases.length === 2);
    const result = await runMain(["status", "--url", url, "--table", name, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const text = await runMain(["status", "--url", url, "--table", name]);
    expect(text.stdout).toContain(name);
    expect(text.stdout).toContain("scheduled");
    for (const release of releases) release();
    await held.stop();
    const [status] = JSON.parse(result.stdout) as StatusJson[];
    return status as StatusJson;
  } finally {
    for (const release of releases) release();
    await broker.close({ timeout: 5000 });
    await admin.execute(dropTableSql(target.dialect, name));
    await admin.close();
  }
}

const expectedGroups = [
  { group: null, total: 10, due: 3, leased: 2, scheduled: 4, processed: 1, dead: 0 },
  { group: "other", total: 2, due: 2, leased: 0, scheduled: 0, processed: 0, dead: 0 },
];

describe("rowclaim status counts due, leased, scheduled and processed rows by group", () => {
  it("on SQLite", async () => {
    const file = join(tempDir(), "status.db");
    // The driver creates the file; status only reads it.
    await createSqliteDriver({ filename: file }).close();
    const status = await statusOfBusyTable({ dialect: "sqlite", filename: file }, file);
    expect(status.columns).toEqual({
      group: "queue",
      runAt: "run_at",
      processedAt: "processed_at",
      lockedUntil: "locked_until",
    });
    expect(status.groups).toEqual(expectedGroups);
  });

  it.each(["postgres", "mysql"] as const)("on %s", async (kind) => {
    const url = await databaseUrl(kind);
    const status = await statusOfBusyTable(parseTarget(url), url);
    expect(status.groups).toEqual(expectedGroups);
  });
});

describe("rowclaim status on a table that does not exist", () => {
  it("says so on stderr and exits 1", async () => {
    const file = join(tempDir(), "empty.db");
    await createSqliteDriver({ filename: file }).close();
    const result = await runMain(["status", "--url", file, "--table", "no_such_table"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"no_such_table" does not exist');
  });

  it("refuses a SQLite file that does not exist instead of creating it", async () => {
    const file = join(tempDir(), "missing.db");
    const result = await runMain(["status", "--url", file, "--table", "jobs"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("does not exist");
  });
});

describe("rowclaim status with other column names", () => {
  it("counts by the columns the --*-column flags name and leaves out roles the table lacks", async () => {
    const file = join(tempDir(), "custom.db");
    const target: Target = { dialect: "sqlite", filename: file };
    const admin = await openAdminConnection(target);
    try {
      await admin.execute(
        'CREATE TABLE "tasks" ("id" INTEGER PRIMARY KEY, "body" TEXT, "due_at" INTEGER, "kind" TEXT); ' +
          `INSERT INTO "tasks" ("body", "due_at", "kind") VALUES ('a', NULL, 'x'), ('b', ${Date.now() + 3_600_000}, 'x'), ('c', 0, NULL);`,
      );
    } finally {
      await admin.close();
    }
    const result = await runMain([
      "status",
      "--url",
      `sqlite:${file}`,
      "--table",
      "tasks",
      "--group-column",
      "kind",
      "--run-at-column",
      "due_at",
      "--json",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const [status] = JSON.parse(result.stdout) as StatusJson[];
    expect(status?.columns).toEqual({ group: "kind", runAt: "due_at" });
    expect(status?.groups).toEqual([
      { group: null, total: 1, due: 1, leased: 0, scheduled: 0, processed: 0, dead: 0 },
      { group: "x", total: 2, due: 1, leased: 0, scheduled: 1, processed: 0, dead: 0 },
    ]);
  });
});
