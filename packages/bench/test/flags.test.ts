/** The workspace benchmark's flags: defaults, values read, and clear errors for bad input. */

import { formatCommandHelp, UsageError } from "rowclaim/bench";
import { describe, expect, it } from "vitest";
import { benchCommand, parseBenchFlags } from "../src/flags.js";

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
      subscribe: {},
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

  it("says --help, and the help names every flag", () => {
    expect(parseBenchFlags(["--help"]).help).toBe(true);
    const help = formatCommandHelp(benchCommand);
    for (const flag of ["--jobs", "--rounds", "--latency-samples", "--only", "--latency-only", "--out"])
      expect(help).toContain(flag);
  });
});

describe("the benchmark refuses flags it cannot take, with a message that names the flag", () => {
  it.each([
    [["--bogus"], /Unknown flag --bogus for node dist\/main\.js/],
    [["--rounds", "x"], /--rounds takes a whole number, not "x"/],
    [["--rounds", "0"], /--rounds must be at least 1, not 0/],
    [["--jobs", "1.5"], /--jobs takes a whole number/],
    [["--workers", ","], /--workers needs a value/],
    [["--latency-samples=-1"], /--latency-samples must be at least 0, not -1/],
    [["--databases", "pg"], /--databases takes postgres, mysql, sqlite; "pg" is not one of them/],
    [["--handler", "x"], /--handler takes async, sync/],
    [["--subscribe", "[]"], /--subscribe takes a JSON object/],
    [["--subscribe", "{"], /--subscribe takes a JSON object/],
  ])("%j", (args, message) => {
    expect(() => parseBenchFlags(args)).toThrow(UsageError);
    expect(() => parseBenchFlags(args)).toThrow(message);
  });
});
