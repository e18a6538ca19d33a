// The vitest settings every rowclaim package shares. With ROWCLAIM_TEST_REPORT_DIR set (.ci/run
// sets it), each package also writes a JSON report there, which .ci/run adds up into its
// closing "N passed, N failed" line.
import { join } from "node:path";

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
      reporters,
      ...overrides,
    },
  };
}
