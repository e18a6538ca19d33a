// The command line loads only the driver of the database it uses: with every other driver and
// client unresolvable it still runs, and with its own missing it exits with DRIVER_NOT_INSTALLED
// and the install command. (tooling/user-install/check.sh checks the same from the packed tarball.)
import { execFile } from "node:child_process";
import { hidePackagesModule, hidingEnv } from "@rowclaim/tooling/import-without";
import { describe, expect, test } from "vitest";
import { DriverNotInstalledError, installCommand, loadForDialect } from "../src/driver-packages.js";
import { binPath, packageDir } from "./build.js";
import type { RunResult } from "./support.js";

/** Runs the built bin with `hidden` packages unresolvable. */
function runWithout(hidden: readonly string[], argv: readonly string[]): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", hidePackagesModule, binPath, ...argv],
      { cwd: packageDir, timeout: 60_000, env: hidingEnv(hidden) },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") reject(error);
        else resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

const postgresUrl = "postgres://127.0.0.1:1/unused";

describe("the command line loads only the driver of the database it uses", () => {
  test("schema for PostgreSQL runs with the SQLite and MySQL drivers and clients not installed", async () => {
    const result = await runWithout(
      ["@rowclaim/sqlite", "better-sqlite3", "@rowclaim/mysql", "mysql2"],
      ["schema", "--url", postgresUrl, "--table", "orders"],
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("CREATE TABLE");
  });

  test("a database whose client is not installed exits 1 with DRIVER_NOT_INSTALLED and the install command", async () => {
    const result = await runWithout(["pg"], ["schema", "--url", postgresUrl, "--table", "orders"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("(DRIVER_NOT_INSTALLED)");
    expect(result.stderr).toContain(installCommand("postgres"));
  });

  test("a database whose driver package is not installed exits 1 with DRIVER_NOT_INSTALLED", async () => {
    const result = await runWithout(["@rowclaim/sqlite"], ["demo", "--jobs", "1"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("(DRIVER_NOT_INSTALLED)");
    expect(result.stderr).toContain(installCommand("sqlite"));
  });
});

describe("loadForDialect passes on failures other than a missing package of the dialect", () => {
  test("a missing package of another dialect, or another error, is rethrown as it is", async () => {
    const notFound = Object.assign(new Error("Cannot find package 'pg' imported from x"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    await expect(loadForDialect("mysql", () => Promise.reject(notFound))).rejects.toBe(notFound);
    const other = new Error("boom");
    await expect(loadForDialect("postgres", () => Promise.reject(other))).rejects.toBe(other);
    await expect(loadForDialect("postgres", () => Promise.reject(notFound))).rejects.toBeInstanceOf(
      DriverNotInstalledError,
    );
  });
});
