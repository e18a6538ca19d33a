// The vitest settings every rowclaim package shares. With ROWCLAIM_TEST_REPORT_DIR set (.ci/run
// sets it), each package also writes a JSON report there, which .ci/run adds up into its
// closing "N passed, N failed" line.
import { availableParallelism } from "node:os";
import { join } from "node:path";

/**
 * Test files run at the same time: at least two. vitest's own default is one fewer than the
 * cores, which is one on a two-core machine; most of a rowclaim test's time is spent waiting on a
 * database, a lease or a child process, not on the CPU, so a second file runs in that time. Each
 * test has tables (and keys) of its own, so files never see each other's rows.
 * `vitest run --maxWorkers=<n>` overrides it.
 */
const maxWorkers = Math.max(2, availableParallelism() - 1);

/**
 * @param {string} name the package's short name, used for its report file
 * @param {Record<string, unknown>} [overrides] more `test` options
 */
export function vitestConfig(name, overrides = {}) {
  const reportDir = process.env.ROWCLAIM_TEST_REPORT_DIR;
  const reporters = reportDir
    ? ["default", ["json", { outputFile: join(reportDir, `${name}.json`) }]]
    : ["default"];
  return {
    test: {
      include: ["test/**/*.test.ts"],
      testTimeout: 60_000,
      hookTimeout: 60_000,
      maxWorkers,
      reporters,
      ...overrides,
    },
  };
}
