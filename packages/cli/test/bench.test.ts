import { databaseUrl } from "@rowclaim/tooling/test-env";
import { beforeAll, describe, expect, it } from "vitest";
import { median } from "../src/bench/rounds.js";
import { runBin, uniquePrefix } from "./support.js";

// The bench prints figures; these tests check only what it ran and counted, never its timings.

interface BenchJson {
  readonly database: string;
  readonly jobs: number;
  readonly rounds: number;
  readonly options: { readonly batch: number | "default"; readonly prefetch?: number };
  readonly results: readonly {
    readonly form: string;
    readonly workers: number;
    readonly batch: number;
    readonly jobs: number;
    readonly rowclaim: {
      readonly perSecond: readonly number[];
      readonly median: number;
      readonly drained: number;
    };
    readonly loop: {
      readonly perSecond: readonly number[];
      readonly median: number;
      readonly drained: number;
    };
    readonly ratio: number;
  }[];
}

describe("rowclaim bench on SQLite", () => {
  it("drains every job of each offered form at each worker count, with rowclaim and with the hand-written loop, in every round", async () => {
    const result = await runBin(["bench", "--jobs", "40", "--workers", "1,3", "--rounds", "2", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const figures = JSON.parse(result.stdout) as BenchJson;
    expect(figures.rounds).toBe(2);
    expect(figures.results.map((entry) => [entry.form, entry.workers, entry.jobs])).toEqual([
      ["lease", 1, 40],
      ["lease", 3, 40],
      ["advisory", 1, 40],
      ["advisory", 3, 40],
    ]);
    for (const entry of figures.results) {
      expect(entry.rowclaim.drained).toBe(40);
      expect(entry.loop.drained).toBe(40);
      expect(entry.rowclaim.perSecond).toHaveLength(2);
      expect(entry.loop.perSecond).toHaveLength(2);
    }
  });

  it("uses the library's default batch (the workers in the lease and advisory forms) unless --batch is given", async () => {
    const defaults = JSON.parse(
      (
        await runBin([
          "bench",
          "--jobs",
          "20",
          "--workers",
          "1,4",
          "--rounds",
          "1",
          "--form",
          "lease",
          "--json",
        ])
      ).stdout,
    ) as BenchJson;
    expect(defaults.options).toEqual({ batch: "default" });
    expect(defaults.results.map((entry) => [entry.workers, entry.batch])).toEqual([
      [1, 1],
      [4, 4],
    ]);
    const given = JSON.parse(
      (
        await runBin([
          "bench",
          "--jobs",
          "20",
          "--workers",
          "4",
          "--batch",
          "2",
          "--rounds",
          "1",
          "--form",
          "lease",
          "--json",
        ])
      ).stdout,
    ) as BenchJson;
    expect(given.options).toEqual({ batch: 2 });
    expect(given.results.map((entry) => [entry.workers, entry.batch])).toEqual([[4, 2]]);
  });

  it("gives rowclaim the throughput option with --prefetch, whose claims then fill the workers and the room held ahead, and leaves the advisory form out", async () => {
    const result = await runBin([
      "bench",
      "--jobs",
      "60",
      "--workers",
      "2",
      "--prefetch",
      "10",
      "--rounds",
      "1",
      "--json",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const figures = JSON.parse(result.stdout) as BenchJson;
    expect(figures.options).toEqual({ batch: "default", prefetch: 10 });
    expect(figures.results.map((entry) => [entry.form, entry.workers, entry.batch])).toEqual([
      ["lease", 2, 12],
    ]);
    for (const entry of figures.results) {
      expect(entry.rowclaim.drained).toBe(60);
      expect(entry.loop.drained).toBe(60);
    }
    const refused = await runBin(["bench", "--jobs", "10", "--prefetch", "10", "--form", "advisory"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("--prefetch");
  });

  it("says which options it gave rowclaim and prints a line per form and worker count with the ratio rowclaim ÷ loop", async () => {
    const result = await runBin(["bench", "--jobs", "30", "--form", "lease", "--rounds", "1"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      "subscribe(table, handler, { workers }): every other option at the library's default",
    );
    expect(result.stdout).toMatch(
      /^form\s+workers\s+batch\s+jobs\s+rowclaim jobs\/s\s+loop jobs\/s\s+rowclaim ÷ loop$/m,
    );
    expect(result.stdout).toMatch(/^lease\s+1\s+1\s+30\s+\d+\s+\d+\s+\d+\.\d\d$/m);
    expect(result.stdout).toMatch(/^lease\s+8\s+8\s+30\s+\d+\s+\d+\s+\d+\.\d\d$/m);
  });

  it("exits 1 when --form names a form the driver does not offer", async () => {
    const result = await runBin(["bench", "--jobs", "10", "--form", "rowLock"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("does not offer the rowLock form");
  });

  it("exits 1 when --batch is larger than a worker count", async () => {
    const result = await runBin(["bench", "--jobs", "10", "--workers", "1,8", "--batch", "4"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("--batch 4 is larger than --workers 1");
  });
});

describe.each(["postgres", "mysql"] as const)("rowclaim bench --url %s", (kind) => {
  let url = "";

  beforeAll(async () => {
    url = await databaseUrl(kind);
  });

  it("drains every job of every form with rowclaim and with the loop, row lock at the library's batch of 1", async () => {
    const result = await runBin([
      "bench",
      "--url",
      url,
      "--jobs",
      "30",
      "--workers",
      "1,3",
      "--rounds",
      "2",
      "--prefix",
      uniquePrefix(`bench_${kind}`),
      "--json",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const figures = JSON.parse(result.stdout) as BenchJson;
    expect(figures.results.map((entry) => [entry.form, entry.workers, entry.batch])).toEqual([
      ["lease", 1, 1],
      ["lease", 3, 3],
      ["advisory", 1, 1],
      ["advisory", 3, 3],
      ["rowLock", 1, 1],
      ["rowLock", 3, 1],
    ]);
    for (const entry of figures.results) {
      expect([entry.form, entry.workers, entry.rowclaim.drained, entry.loop.drained]).toEqual([
        entry.form,
        entry.workers,
        30,
        30,
      ]);
    }
  });
});

describe("the bench's median", () => {
  it("is the middle value of an odd count and the mean of the middle two of an even count", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(Number.isNaN(median([]))).toBe(true);
  });
});
