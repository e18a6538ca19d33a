import { describe, expect, it } from "vitest";
import { runBin } from "./support.js";

// The bench prints figures; these tests check only that it runs and counts, never its timings.
describe("rowclaim bench", () => {
  it("publishes and drains every job of each form the SQLite driver offers and exits 0", async () => {
    const result = await runBin(["bench", "--jobs", "60", "--workers", "2", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const figures = JSON.parse(result.stdout) as {
      results: { form: string; jobs: number; drained: number }[];
    };
    expect(figures.results.map((entry) => [entry.form, entry.jobs, entry.drained])).toEqual([
      ["lease", 60, 60],
      ["advisory", 60, 60],
    ]);
  });

  it("prints a line per form with publish and drain rates", async () => {
    const result = await runBin(["bench", "--jobs", "30", "--form", "lease"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^form\s+jobs\s+publish\s+publish jobs\/s\s+drain\s+drain jobs\/s$/m);
    expect(result.stdout).toMatch(/^lease\s+30\s/m);
  });

  it("exits 1 when --form names a form the driver does not offer", async () => {
    const result = await runBin(["bench", "--jobs", "10", "--form", "rowLock"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("does not offer the rowLock form");
  });
});
