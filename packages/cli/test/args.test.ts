import { describe, expect, it } from "vitest";
import {
  type CommandSpec,
  formatCommandHelp,
  integerListFlag,
  listFlag,
  parseFlags,
  UsageError,
} from "../src/args.js";
import { parseTarget, type Target } from "../src/target.js";

const spec: CommandSpec = {
  name: "try",
  summary: "a command for the tests",
  flags: {
    url: { type: "string", value: "URL", description: "a database" },
    jobs: { type: "integer", value: "N", max: 100, description: "how many" },
    delay: { type: "integer", value: "MS", min: 0, description: "a delay" },
    json: { type: "boolean", description: "print JSON" },
    form: { type: "string", choices: ["lease", "advisory", "rowLock"], multiple: true, description: "forms" },
    dialect: { type: "string", choices: ["sqlite", "postgres"], description: "a dialect" },
  },
};

const needs: CommandSpec = {
  name: "needs",
  summary: "",
  flags: { table: { type: "string", required: true, description: "" } },
};

function usageError(run: () => unknown): UsageError {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error("expected a UsageError");
}

describe("parseFlags reads values", () => {
  it("takes --flag value and --flag=value", () => {
    expect(parseFlags(spec, ["--url", "postgres://x", "--jobs=7"]).values).toEqual({
      url: "postgres://x",
      jobs: 7,
    });
  });

  it("takes --flag and --no-flag for booleans, and --flag=true/false", () => {
    expect(parseFlags(spec, ["--json"]).values).toEqual({ json: true });
    expect(parseFlags(spec, ["--no-json"]).values).toEqual({ json: false });
    expect(parseFlags(spec, ["--json=false"]).values).toEqual({ json: false });
  });

  it("collects a repeatable flag from repeats and commas, in order", () => {
    const parsed = parseFlags(spec, ["--form", "lease,advisory", "--form=rowLock"]);
    expect(listFlag(parsed, "form")).toEqual(["lease", "advisory", "rowLock"]);
  });

  it("leaves flags that were not given absent", () => {
    expect(parseFlags(spec, []).values).toEqual({});
  });

  it("accepts 0 where an integer flag's minimum is 0", () => {
    expect(parseFlags(spec, ["--delay", "0"]).values).toEqual({ delay: 0 });
  });

  it("reports -h and --help, and then does not demand required flags", () => {
    expect(parseFlags(spec, ["-h"]).help).toBe(true);
    expect(parseFlags(needs, ["--help"]).help).toBe(true);
  });

  it("ignores a bare -- (as package-manager scripts pass it along)", () => {
    expect(parseFlags(spec, ["--", "--jobs", "3"]).values).toEqual({ jobs: 3 });
  });

  it("takes a lone dash as a value", () => {
    expect(parseFlags(spec, ["--url", "-"]).values).toEqual({ url: "-" });
  });
});

describe("parseFlags refuses a wrong command line with a UsageError naming the command", () => {
  it.each([
    ["an unknown flag", ["--nope"]],
    ["a positional argument", ["extra"]],
    ["a missing value", ["--url"]],
    ["a flag where a value should be", ["--url", "--json"]],
    ["a non-integer", ["--jobs", "1.5"]],
    ["an integer under the minimum", ["--jobs", "0"]],
    ["an integer over the maximum", ["--jobs", "101"]],
    ["a value outside the choices", ["--dialect", "oracle"]],
    ["a choice outside the list of a repeatable flag", ["--form", "lease,queue"]],
    ["a repeated single flag", ["--url", "a", "--url", "b"]],
    ["a value on --no-flag", ["--no-json=1"]],
    ["a boolean given a word", ["--json=yes"]],
    ["an empty value", ["--url="]],
  ])("refuses %s", (_, argv) => {
    expect(usageError(() => parseFlags(spec, argv)).command).toBe("try");
  });

  it("refuses a command line without a required flag", () => {
    expect(usageError(() => parseFlags(needs, [])).message).toContain("--table");
  });
});

describe("formatCommandHelp lists every flag", () => {
  it("shows each flag with its placeholder, choices and the help flag", () => {
    const help = formatCommandHelp(spec);
    for (const name of Object.keys(spec.flags)) expect(help).toContain(`--${name}`);
    expect(help).toContain("--url URL");
    expect(help).toContain("one of sqlite, postgres");
    expect(help).toContain("-h, --help");
  });
});

describe("a command run otherwise than as rowclaim <name> is named as it is run", () => {
  const elsewhere: CommandSpec = { ...spec, invocation: "node dist/main.js" };

  it("in its errors", () => {
    expect(usageError(() => parseFlags(elsewhere, ["--bogus"])).message).toMatch(
      /^Unknown flag --bogus for node dist\/main\.js\./,
    );
    expect(usageError(() => parseFlags({ ...needs, invocation: "x run" }, [])).message).toMatch(
      /^x run needs --table/,
    );
  });

  it("in its --help", () => {
    const help = formatCommandHelp(elsewhere);
    expect(help).toContain("Usage: node dist/main.js [flags]");
    expect(help).not.toContain("rowclaim try");
  });
});

describe("integerListFlag reads a repeatable whole-number flag", () => {
  const counts: CommandSpec = {
    name: "counts",
    summary: "",
    flags: { workers: { type: "integer", multiple: true, description: "" } },
  };

  it("gives the values in order, from commas and repeats, or the fallback when not given", () => {
    expect(integerListFlag(parseFlags(counts, ["--workers", "1,8", "--workers=2"]), "workers", [5])).toEqual([
      1, 8, 2,
    ]);
    expect(integerListFlag(parseFlags(counts, []), "workers", [5])).toEqual([5]);
  });
});

describe("parseTarget picks the database from the URL", () => {
  const cases: [url: string, target: Target][] = [
    ["postgres://u@h:5432/db", { dialect: "postgres", url: "postgres://u@h:5432/db" }],
    ["postgresql://u@h/db", { dialect: "postgres", url: "postgresql://u@h/db" }],
    ["mysql://root@127.0.0.1:3306/test", { dialect: "mysql", url: "mysql://root@127.0.0.1:3306/test" }],
    ["mariadb://root@127.0.0.1:3306/test", { dialect: "mysql", url: "mysql://root@127.0.0.1:3306/test" }],
    ["sqlite:./jobs.db", { dialect: "sqlite", filename: "./jobs.db" }],
    ["sqlite://relative.db", { dialect: "sqlite", filename: "relative.db" }],
    ["sqlite:///var/data/jobs.db", { dialect: "sqlite", filename: "/var/data/jobs.db" }],
    ["sqlite::memory:", { dialect: "sqlite", filename: ":memory:" }],
    ["/tmp/jobs.sqlite", { dialect: "sqlite", filename: "/tmp/jobs.sqlite" }],
    ["jobs.db", { dialect: "sqlite", filename: "jobs.db" }],
  ];
  for (const [url, target] of cases) {
    const reads =
      target.dialect === "sqlite"
        ? `SQLite on ${target.filename}`
        : `${target.dialect === "postgres" ? "PostgreSQL" : "MySQL/MariaDB"} at ${target.url}`;
    it(`reads ${url} as ${reads}`, () => {
      expect(parseTarget(url)).toEqual(target);
    });
  }

  it("refuses an unknown scheme and an empty sqlite: URL", () => {
    expect(() => parseTarget("redis://localhost")).toThrow(UsageError);
    expect(() => parseTarget("sqlite:")).toThrow(UsageError);
  });
});
