import { type ClaimFormName, readQueueStatus } from "@rowclaim/core";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAdminConnection } from "../src/admin-connection.js";
import { dropTableSql } from "../src/admin-sql.js";
import { createDriver } from "../src/connect.js";
import { expectedCounts } from "../src/job-plan.js";
import { formNames, formTableSuffix, standardTable } from "../src/tables.js";
import { parseTarget } from "../src/target.js";
import { runBin, uniquePrefix } from "./support.js";

const JOBS = 150;
const expected = expectedCounts(JOBS);

interface SummaryLine {
  readonly table: string;
  readonly form: string;
  readonly jobs: number;
  readonly handled: number;
  readonly retried: number;
  readonly deadLettered: number;
}

/** Reads the demo's summary table from its stdout, one entry per line after the header. */
function parseSummary(stdout: string): SummaryLine[] {
  const lines = stdout.split("\n");
  const header = lines.findIndex((line) => line.startsWith("table") && line.includes("dead-lettered"));
  expect(header).toBeGreaterThanOrEqual(0);
  const entries: SummaryLine[] = [];
  for (const line of lines.slice(header + 1)) {
    if (line.trim() === "" || line.startsWith("total")) break;
    const [table, form, jobs, handled, retried, deadLettered] = line.trim().split(/\s+/);
    entries.push({
      table: table as string,
      form: form as string,
      jobs: Number(jobs),
      handled: Number(handled),
      retried: Number(retried),
      deadLettered: Number(deadLettered),
    });
  }
  return entries;
}

/**
 * Reads the summary from the demo's stdout and checks it lists `forms` in order, each table with
 * the planned jobs' counts: handled, retried and dead-lettered.
 */
function expectEveryTableDone(stdout: string, forms: readonly string[]): SummaryLine[] {
  const summary = parseSummary(stdout);
  expect(summary.map((line) => line.form)).toEqual(forms);
  for (const line of summary) {
    expect(line).toMatchObject({
      jobs: JOBS,
      handled: expected.handled,
      deadLettered: expected.deadLettered,
      retried: expected.retried,
    });
  }
  return summary;
}

describe("rowclaim demo with no --url", () => {
  it("runs on a temporary SQLite file, drains the lease and advisory tables and exits 0", async () => {
    expect(expected.deadLettered).toBeGreaterThan(0);
    const result = await runBin(["demo", "--jobs", String(JOBS)]);
    expect(result.stderr).toContain("SQLite file");
    expect(result.code).toBe(0);
    expectEveryTableDone(result.stdout, ["lease", "advisory"]);
    expect(result.stdout).toContain("Every job was handled or dead-lettered.");
    // The summary says that rows/s counts the simulated work and retries, and where throughput is measured.
    expect(result.stdout).toContain("--work-ms");
    expect(result.stdout).toContain("rowclaim bench");
    expect(result.stderr).toContain("does not offer the rowLock form");
  });

  it("prints the summary as JSON with --json", async () => {
    const result = await runBin(["demo", "--jobs", "40", "--workers", "2", "--json"]);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as {
      complete: boolean;
      tables: { handled: number; deadLettered: number }[];
    };
    expect(summary.complete).toBe(true);
    expect(summary.tables).toHaveLength(2);
    for (const table of summary.tables) expect(table.handled + table.deadLettered).toBe(40);
  });

  it("exits 1 when the jobs cannot be drained before --timeout", async () => {
    // 4000 jobs of up to 1 s of work each on 1 worker cannot finish in 1 s.
    const result = await runBin([
      "demo",
      "--jobs",
      "4000",
      "--workers",
      "1",
      "--work-ms",
      "1000",
      "--timeout",
      "1",
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("were neither handled nor dead-lettered");
  });
});

describe.each(["postgres", "mysql"] as const)("rowclaim demo --url %s", (kind) => {
  const prefix = uniquePrefix(`demo_${kind}`);
  let url = "";

  beforeAll(async () => {
    url = await databaseUrl(kind);
  });

  afterAll(async () => {
    if (url === "") return;
    const admin = await openAdminConnection(parseTarget(url));
    try {
      for (const form of formNames)
        await admin.execute(dropTableSql(admin.dialect, `${prefix}_${formTableSuffix[form]}`));
    } finally {
      await admin.close();
    }
  });

  it("drains a table per form (lease, advisory, row lock), dead-letters the poison jobs and exits 0", async () => {
    const result = await runBin(["demo", "--url", url, "--jobs", String(JOBS), "--prefix", prefix]);
    expect(result.code, result.stderr).toBe(0);
    const summary = expectEveryTableDone(result.stdout, ["lease", "advisory", "rowLock"]);
    // The tables say the same (core's status reading): processed rows, and the poison jobs in the dead-letter group.
    const driver = await createDriver(parseTarget(url));
    try {
      for (const line of summary) {
        const table = standardTable({
          name: line.table,
          form: line.form as ClaimFormName,
          processedAt: true,
          key: `${line.table}:{account}`,
          maxAttempts: 3,
          deadLetterGroup: "dead",
        });
        const status = await readQueueStatus(driver, table);
        const figures = status.groups.map((group) => [
          group.group,
          ...[group.due, group.delayed, group.inWork, group.dead, group.processed].map(
            (count) => count.count,
          ),
        ]);
        expect(figures).toEqual([
          [null, 0, 0, 0, 0, expected.handled],
          ["dead", 0, 0, 0, expected.deadLettered, 0],
        ]);
      }
    } finally {
      await driver.close();
    }
  });
});
