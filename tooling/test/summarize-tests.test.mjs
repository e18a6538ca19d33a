// The closing line CI prints (tooling/summarize-tests.mjs), tried on vitest JSON reports written to
// a temporary folder: it adds them up, names each failed test, and fails on a missing report.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../summarize-tests.mjs", import.meta.url));
const folders = [];

afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Writes the reports (name → JSON) to a new folder and runs the script on it. */
function summarize(reports, expected = Object.keys(reports)) {
  const dir = mkdtempSync(join(tmpdir(), "rowclaim-summary-"));
  folders.push(dir);
  for (const [name, report] of Object.entries(reports)) {
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(report));
  }
  try {
    const stdout = execFileSync(process.execPath, [script, dir, ...expected], {
      encoding: "utf8",
      stdio: "pipe",
    });
    return { status: 0, stdout, stderr: "" };
  } catch (error) {
    return { status: error.status, stdout: error.stdout, stderr: error.stderr };
  }
}

describe("the closing line of CI", () => {
  it("adds up the reports and exits 0 when nothing failed", () => {
    const result = summarize({
      a: { numPassedTests: 3, numFailedTests: 0, numPendingTests: 1, testResults: [] },
      b: { numPassedTests: 2, numFailedTests: 0, numPendingTests: 0, testResults: [] },
    });
    expect(result).toMatchObject({ status: 0, stdout: "5 passed, 0 failed, 1 skipped\n" });
  });

  it("names each failed test with the first line of its failure, and exits 1", () => {
    const result = summarize({
      mysql: {
        numPassedTests: 1,
        numFailedTests: 1,
        numPendingTests: 0,
        testResults: [
          {
            name: "/repo/packages/mysql/test/lease.test.ts",
            status: "failed",
            assertionResults: [
              { status: "passed", fullName: "lease claims a row", failureMessages: [] },
              {
                status: "failed",
                fullName: "lease extends the lease each half lease",
                failureMessages: ["AssertionError: expected 1 to be 2\n    at lease.test.ts:10:3"],
              },
            ],
          },
        ],
      },
    });
    expect(result.status).toBe(1);
    expect(result.stdout).toBe("1 passed, 1 failed, 0 skipped\n");
    expect(result.stderr).toContain(
      "FAILED /repo/packages/mysql/test/lease.test.ts > lease extends the lease each half lease: AssertionError: expected 1 to be 2",
    );
    expect(result.stderr).not.toContain("lease claims a row");
  });

  it("counts a missing report as a failure", () => {
    const result = summarize({ a: { numPassedTests: 1, numFailedTests: 0, numPendingTests: 0 } }, ["a", "b"]);
    expect(result.status).toBe(1);
    expect(result.stdout).toBe("1 passed, 1 failed, 0 skipped\n");
    expect(result.stderr).toContain("no report from b");
  });
});
