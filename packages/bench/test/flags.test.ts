/** The workspace benchmark's flags: defaults, values read, and clear errors for bad input. */
import { describe, expect, it } from "vitest";
import { FlagError, parseBenchFlags, usage } from "../src/flags.js";

describe("the benchmark reads its flags", () => {
  it("with none, runs every database at 1 and 8 workers, 3 rounds, prefetch 500", () => {
    const flags = parseBenchFlags([]);
    expect(flags).toMatchObject({
      help: false,
      jobs: 10_000,
      serverWorkers: [1, 8],
      sqliteWorkers: [1],
      rounds: 3,
      latencySamples: 200,
      databases: ["postgres", "mysql", "sqlite"],
      only: undefined,
      prefetch: [500],
      pgBossBatches: [500],
      handler: "async",
      latencyOnly: false,
    });
  });

  it("takes the values given, after the `--` that pnpm passes on, and the URLs from the environment", () => {
    const flags = parseBenchFlags(
      [
        "--",
        "--jobs",
        "500",
        "--workers",
        "2,4",
        "--prefetch",
        "0",
        "--only",
        "a,b",
        "--latency-samples",
        "0",
      ],
      { ROWCLAIM_POSTGRES_URL: "postgres://elsewhere/db" },
    );
    expect(flags).toMatchObject({
      jobs: 500,
      serverWorkers: [2, 4],
      prefetch: [],
      only: ["a", "b"],
      latencySamples: 0,
      url: "postgres://elsewhere/db",
    });
  });

  it("says --help, and the usage names every flag", () => {
    expect(parseBenchFlags(["--help"]).help).toBe(true);
    for (const flag of ["--jobs", "--rounds", "--latency-samples", "--only", "--latency-only", "--out"])
      expect(usage).toContain(flag);
  });
});

describe("the benchmark refuses flags it cannot take, with a message that names the flag", () => {
  it.each([
    [["--bogus"], /Unknown option '--bogus'.*--help/],
    [["--rounds", "x"], /--rounds takes a whole number of at least 1, not "x"/],
    [["--rounds", "0"], /--rounds takes a whole number of at least 1/],
    [["--jobs", "1.5"], /--jobs takes a whole number/],
    [["--workers", ","], /--workers takes a comma-separated list/],
    [["--latency-samples=-1"], /--latency-samples takes a whole number of at least 0/],
    [["--databases", "pg"], /--databases takes a list of postgres, mysql, sqlite, not "pg"/],
    [["--handler", "x"], /--handler takes async or sync/],
    [["--subscribe", "[]"], /--subscribe takes a JSON object/],
    [["--subscribe", "{"], /--subscribe takes a JSON object/],
  ])("%j", (args, message) => {
    expect(() => parseBenchFlags(args)).toThrow(FlagError);
    expect(() => parseBenchFlags(args)).toThrow(message);
  });
});
