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

interface Count {
  count: number;
  capped: boolean;
}

interface StatusJson {
  table: string;
  form: string;
  cap: number;
  groups: {
    group: string | null;
    due: Count;
    delayed: Count;
    inWork: Count;
    dead: Count;
    processed: Count;
    oldestDueAgeMs: number | null;
    paused: boolean;
  }[];
  inWork?: {
    id: string | number;
    group: string | null;
    holder: { form: string; lockedUntil?: string; session?: string };
  }[];
}

/** A group's figures as numbers: due, delayed, in work, dead, processed. */
function figures(group: StatusJson["groups"][number] | undefined): number[] {
  if (group === undefined) return [];
  return [group.due, group.delayed, group.inWork, group.dead, group.processed].map((count) => count.count);
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
    const result = await runMain(["status", "--url", url, "--table", name, "--json", "--in-work"]);
    expect(result.code, result.stderr).toBe(0);
    const text = await runMain(["status", "--url", url, "--table", name, "--in-work"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(name);
    expect(text.stdout).toContain("in work");
    expect(text.stdout).toContain("lease until");
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

/** Due, delayed, in work, dead, processed: of the rows without a group, then of group "other". */
const expectedGroups = [
  [null, [3, 4, 2, 0, 1]],
  ["other", [2, 0, 0, 0, 0]],
];

function expectBusyTable(status: StatusJson): void {
  expect(status.form).toBe("lease");
  expect(status.groups.map((group) => [group.group, figures(group)])).toEqual(expectedGroups);
  expect(status.inWork).toHaveLength(2);
  for (const row of status.inWork ?? []) {
    expect(row.holder.form).toBe("lease");
    expect(Date.parse(row.holder.lockedUntil ?? "")).toBeGreaterThan(Date.now());
  }
}

describe("rowclaim status counts due, delayed, in work (unexpired leases), dead and processed rows by group", () => {
  it("on SQLite", async () => {
    const file = join(tempDir(), "status.db");
    // The driver creates the file; status only reads it.
    await createSqliteDriver({ filename: file }).close();
    expectBusyTable(await statusOfBusyTable({ dialect: "sqlite", filename: file }, file));
  });

  it.each(["postgres", "mysql"] as const)("on %s", async (kind) => {
    const url = await databaseUrl(kind);
    expectBusyTable(await statusOfBusyTable(parseTarget(url), url));
  });
});

describe.each(["postgres", "mysql"] as const)("rowclaim status on a %s row lock table", (kind) => {
  it("shows the rows locked now as in work, --in-work lists them (with the backend pid on PostgreSQL), and --cap prints N+", async () => {
    const url = await databaseUrl(kind);
    const target = parseTarget(url);
    const name = uniquePrefix("status_lock");
    const table = standardTable({ name, form: "rowLock" });
    const admin = await openAdminConnection(target);
    const driver = await createDriver(target);
    const broker = createBroker({ driver, logger: silentLogger });
    const releases: (() => void)[] = [];
    try {
      await admin.execute(dropTableSql(target.dialect, name));
      await admin.execute(driver.schemaSql(table));
      await broker.publishMany(
        table,
        Array.from({ length: 4 }, (_, n) => ({ payload: { n } })),
      );
      await broker.subscribe(table, () => new Promise<void>((resolve) => releases.push(resolve)), {
        workers: 1,
        batch: 1,
      });
      await waitUntil(() => releases.length === 1);
      const result = await runMain(["status", "--url", url, "--table", name, "--json", "--in-work"]);
      expect(result.code, result.stderr).toBe(0);
      const [status] = JSON.parse(result.stdout) as StatusJson[];
      expect(status?.form).toBe("rowLock");
      expect(status?.groups.map((group) => [group.group, figures(group)])).toEqual([[null, [3, 0, 1, 0, 0]]]);
      expect(status?.inWork).toHaveLength(1);
      if (kind === "postgres") expect(status?.inWork?.[0]?.holder.session).toMatch(/^\d+$/);
      const capped = await runMain(["status", "--url", url, "--table", name, "--cap", "2", "--in-work"]);
      expect(capped.code, capped.stderr).toBe(0);
      expect(capped.stdout).toContain("2+");
      if (kind === "postgres") expect(capped.stdout).toContain("backend pid");
    } finally {
      for (const release of releases) release();
      await broker.close({ timeout: 5000 });
      await admin.execute(dropTableSql(target.dialect, name));
      await admin.close();
    }
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
    expect(status?.groups.map((group) => [group.group, figures(group)])).toEqual([
      [null, [1, 0, 0, 0, 0]],
      ["x", [1, 1, 0, 0, 0]],
    ]);
  });
});
