// Shared by the command line's tests: run the command line in-process or as the built bin.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { main } from "../src/main.js";

import { binPath, packageDir } from "./build.js";

/** What a run of the command line printed and returned. */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the command line in this process, capturing what it writes. */
export async function runMain(argv: readonly string[]): Promise<RunResult> {
  let stdout = "";
  let stderr = "";
  const code = await main(argv, {
    stdout: { write: (text: string) => (stdout += text), isTTY: false },
    stderr: { write: (text: string) => (stderr += text), isTTY: false },
  });
  return { code, stdout, stderr };
}

/** Runs the built bin with node, as a user would; resolves with its exit code and output. */
export function runBin(argv: readonly string[], timeoutMs = 90_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [binPath, ...argv],
      { cwd: packageDir, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") {
          reject(new Error(`rowclaim ${argv.join(" ")} did not exit: ${error.message}\n${stderr}`));
          return;
        }
        resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

/** A unique table-name prefix for one test (other tests share the database servers). */
export function uniquePrefix(label: string): string {
  return `rc_cli_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

const tempDirs: string[] = [];
// Registered when a test file imports this module (each file gets its own copy of it).
afterAll(() => {
  for (const made of tempDirs.splice(0)) rmSync(made, { recursive: true, force: true });
});
/** A new temporary directory, removed after the test file that made it (an `afterAll` of that file). */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "rowclaim-cli-test-"));
  tempDirs.push(dir);
  return dir;
}
