// A smoke test of the comparison harness with tiny numbers: every queue fills and drains, the
// JSON and the chart are written. It runs the built script (turbo's test task builds first) and
// checks counts and shapes only, never a timing.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../dist/main.js", import.meta.url));
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
  readonly ratios: readonly { subject: string; versus: string; workers: number }[];
  readonly latency: readonly { id: string; scope: string; samples: number }[];
}

describe("the workspace benchmark", () => {
  it("drains every queue at each worker count, measures latency and writes the JSON result and the SVG chart", async () => {
    const url = await databaseUrl("postgres");
    const code = await new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        [
          script,
          "--jobs",
          "20",
          "--workers",
          "1,2",
          "--rounds",
          "1",
          "--latency-samples",
          "2",
          "--url",
          url,
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
    const ids = [
      "rowclaim-pg-lease",
      "rowclaim-pg-lease-rate-limited",
      "rowclaim-pg-rowLock",
      "rowclaim-pg-advisory",
      "rowclaim-pg-advisory-limit-3",
      "rowclaim-pg-lease-prefetch-500",
      "rowclaim-pg-rowLock-prefetch-500",
      "graphile-worker",
      "pg-boss-500",
      "bulk-loop-pg",
      "rowclaim-sqlite-lease",
      "sqlite-loop-full",
      "rowclaim-sqlite-lease-normal",
      "plainjob",
    ];
    expect(results.throughput.map((entry) => [entry.id, entry.workers, entry.perSecond.length])).toEqual(
      ids.flatMap((id) => [
        [id, 1, 1],
        [id, 2, 1],
      ]),
    );
    for (const versus of ["plainjob", "sqlite-loop-full", "graphile-worker", "bulk-loop-pg"]) {
      expect(
        results.ratios
          .filter((ratio) => ratio.versus === versus)
          .map((ratio) => ratio.workers)
          .filter((workers, index, all) => all.indexOf(workers) === index),
      ).toEqual([1, 2]);
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
  }, 150_000);
});
