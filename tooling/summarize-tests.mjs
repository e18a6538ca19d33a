// Adds up the vitest JSON reports that the packages wrote into one directory and prints the
// closing line CI reads: "N passed, N failed, N skipped". Exits 1 when any test failed, when a
// report is missing or unreadable, or when no test ran at all. Names every failed test.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
const expected = process.argv.slice(3);
if (!dir) {
  console.error("usage: node tooling/summarize-tests.mjs REPORT_DIR [expected-report-names…]");
  process.exit(2);
}
let passed = 0;
let failed = 0;
let skipped = 0;
let broken = false;
const files = readdirSync(dir).filter((name) => name.endsWith(".json"));
for (const name of expected) {
  if (!files.includes(`${name}.json`)) {
    console.error(`summarize-tests: no report from ${name} (its tests did not run to the end)`);
    broken = true;
  }
}
for (const file of files) {
  try {
    const report = JSON.parse(readFileSync(join(dir, file), "utf8"));
    passed += report.numPassedTests ?? 0;
    failed += report.numFailedTests ?? 0;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    // A suite that failed to load has no tests counted, but fails the report.
    for (const suite of report.testResults ?? []) {
      // Each failed test is named, with the first line of its failure, next to the closing line:
      // CI's record keeps only the tail of the log.
      let testsFailed = 0;
      for (const test of suite.assertionResults ?? []) {
        if (test.status !== "failed") continue;
        testsFailed += 1;
        const why = String((test.failureMessages ?? [])[0] ?? "").split("\n")[0];
        console.error(`summarize-tests: FAILED ${suite.name} > ${test.fullName}: ${why}`);
      }
      if (suite.status === "failed" && testsFailed === 0) {
        console.error(
          `summarize-tests: ${suite.name} failed to run: ${String(suite.message ?? "").split("\n")[0]}`,
        );
        failed += 1;
      }
    }
    console.error(
      `summarize-tests: ${file}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`,
    );
  } catch (error) {
    console.error(`summarize-tests: cannot read ${file}: ${error.message}`);
    broken = true;
  }
}
if (broken) failed += 1;
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
