import { describe, expect, it } from "vitest";
import { commands } from "../src/main.js";
import { runBin, runMain } from "./support.js";

describe("rowclaim --help", () => {
  it("lists every command and exits 0", async () => {
    const result = await runMain(["--help"]);
    expect(result.code).toBe(0);
    for (const command of commands) expect(result.stdout).toContain(command.spec.name);
  });

  it.each(commands.map((command) => command.spec.name))(
    "shows the flags of %s with --help and exits 0",
    async (name) => {
      const result = await runMain([name, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`Usage: rowclaim ${name} [flags]`);
      const spec = commands.find((command) => command.spec.name === name)?.spec;
      for (const flag of Object.keys(spec?.flags ?? {})) expect(result.stdout).toContain(`--${flag}`);
    },
  );

  it("shows a command's help with `help <command>`", async () => {
    const result = await runMain(["help", "schema"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("--dialect");
  });
});

describe("a wrong command line exits 2 with a message on stderr", () => {
  it.each([
    ["no command", []],
    ["an unknown command", ["launch"]],
    ["an unknown flag", ["demo", "--jobz", "5"]],
    ["a bad value", ["demo", "--jobs", "many"]],
    ["a missing required flag", ["schema", "--table", "jobs"]],
    ["an unknown dialect", ["schema", "--dialect", "oracle", "--table", "jobs"]],
    ["an unknown URL scheme", ["status", "--url", "redis://localhost", "--table", "jobs"]],
    [
      "a key without the advisory form",
      ["schema", "--dialect", "sqlite", "--table", "jobs", "--key", "k-{id}"],
    ],
    ["a bad table prefix", ["demo", "--prefix", "no spaces"]],
  ])("for %s", async (_, argv) => {
    const result = await runMain(argv);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^rowclaim/);
  });
});

describe("the built bin", () => {
  it("exits 2 for an unknown command and 0 for --help, as a process", async () => {
    const unknown = await runBin(["launch"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown command "launch"');
    const help = await runBin(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: rowclaim <command>");
  });

  it("prints the package's version with --version", async () => {
    const result = await runBin(["--version"]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
