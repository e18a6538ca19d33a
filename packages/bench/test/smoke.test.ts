// A smoke test of the comparison harness with tiny numbers: every queue fills and drains in a
// process of its own, the JSON and the chart are written; and `loops` runs the command line's
// `rowclaim bench` (the same loop code the harness's loop contenders run). It runs the built
// scripts (turbo's test task builds first) and checks counts and shapes only, never a timing.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const loopsScript = fileURLToPath(new URL("../dist/loops.js", import.meta.url));
const out = mkdtempSync(join(tmpdir(), "rowclaim-bench-smoke-"));

afterAll(() => {
  rmSync(out, { recursive: true, force: true });
});

interface Results {
  readonly throughput: readonly {
    id: string;
    workers: number;
    perSecond: readonly number[];
    cpuMicrosPerJob: readonly number[];
  }[];
  readonly ratios: readonly { subject: string; versus: string; workers: number; cpuRatio: number }[];
  readonly latency: readonly { id: string; scope: string; samples: number }[];
}

describe("the workspace benchmark", () => {
  it("drains every queue at each worker count, measures latency and writes the JSON result and the SVG chart", async () => {
    const url = await databaseUrl("postgres");
    const mysqlUrl = await databaseUrl("mysql");
    const code = await new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        [
          script,
          "--jobs",
          "20",
          "--workers",
          "2",
          "--sqlite-workers",
          "1",
          "--rounds",
          "1",
          "--latency-samples",
          "2",
          "--url",
          url,
          "--mysql",
          mysqlUrl,
          "--out",
          out,
        ],
        { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
        (error, _stdout, stderr) => {
          if (error !== null) process.stderr.write(stderr);
          resolve(error === null ? 0 : typeof error.code === "number" ? error.code : 1);
        },
      );
    });
    expect(code).toBe(0);
    const results = JSON.parse(readFileSync(join(out, "results.json"), "utf8")) as Results;
    const server = (p: string) => [
      `rowclaim-${p}-lease`,
      `rowclaim-${p}-rowLock`,
      `rowclaim-${p}-advisory`,
      ...(p === "pg" ? ["rowclaim-pg-lease-rate-limited", "rowclaim-pg-advisory-limit-3"] : []),
      `rowclaim-${p}-lease-prefetch-500`,
      `rowclaim-${p}-rowLock-prefetch-500`,
      `loop-${p}-lease`,
      `loop-${p}-rowLock`,
      `loop-${p}-advisory`,
      p === "pg" ? "bulk-loop-pg" : "bulk-loop-mysql",
    ];
    const sqlite = [
      "rowclaim-sqlite-lease",
      "sqlite-loop-full",
      "bulk-loop-sqlite-full",
      "rowclaim-sqlite-lease-normal",
      "sqlite-loop-normal",
      "bulk-loop-sqlite-normal",
      "plainjob",
    ];
    const expected = [
      ...[...server("pg"), "graphile-worker", "pg-boss-500", ...server("mysql")].map((id) => [id, 2, 1]),
      ...sqlite.map((id) => [id, 1, 1]),
    ];
    expect(results.throughput.map((entry) => [entry.id, entry.workers, entry.perSecond.length])).toEqual(
      expected,
    );
    for (const versus of [
      "plainjob",
      "sqlite-loop-full",
      "graphile-worker",
      "bulk-loop-pg",
      "bulk-loop-mysql",
      "loop-pg-lease",
      "loop-mysql-rowLock",
    ]) {
      expect(
        results.ratios.some((ratio) => ratio.versus === versus),
        versus,
      ).toBe(true);
    }
    expect(results.throughput.every((entry) => entry.cpuMicrosPerJob.length === entry.perSecond.length)).toBe(
      true,
    );
    expect(results.latency.map((entry) => `${entry.id} ${entry.scope}`)).toEqual([
      "rowclaim-pg-lease in-process",
      "rowclaim-pg-lease cross-process",
      "rowclaim-pg-rowLock in-process",
      "rowclaim-pg-rowLock cross-process",
      "rowclaim-pg-advisory in-process",
      "rowclaim-pg-advisory cross-process",
      "graphile-worker in-process",
      "graphile-worker cross-process",
      "rowclaim-sqlite-lease in-process",
      "pg-boss in-process",
      "plainjob in-process",
    ]);
    expect(readFileSync(join(out, "results.svg"), "utf8")).toMatch(
      /^<svg [^>]*>[\s\S]*rowclaim lease[\s\S]*<\/svg>\n$/,
    );
  }, 240_000);
});

describe("the loops run", () => {
  it("runs rowclaim bench on SQLite and writes its figures and the chart", async () => {
    const code = await new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        [loopsScript, "--jobs", "20", "--workers", "1", "--rounds", "1", "--only", "sqlite", "--out", out],
        { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
        (error, _stdout, stderr) => {
          if (error !== null) process.stderr.write(stderr);
          resolve(error === null ? 0 : typeof error.code === "number" ? error.code : 1);
        },
      );
    });
    expect(code).toBe(0);
    const figures = JSON.parse(readFileSync(join(out, "loop-sqlite.json"), "utf8")) as {
      results: readonly { form: string; workers: number; loop: { median: number } }[];
    };
    expect(figures.results.map((entry) => [entry.form, entry.workers])).toEqual([
      ["lease", 1],
      ["advisory", 1],
    ]);
    expect(readFileSync(join(out, "loops.svg"), "utf8")).toMatch(/^<svg [^>]*>[\s\S]*<\/svg>\n$/);
  }, 150_000);
});
