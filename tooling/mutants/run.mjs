#!/usr/bin/env node
// The conformance suite tests itself: plants each bug of ./catalogue.mjs, one at a time, in a
// throwaway copy of its driver package and runs that driver's conformance test file there
// (filtered to the tests the entry names), then reports whether the suite caught it (at least
// one test failed). Ends with "N planted bugs, all caught", or lists the escapes and exits 1.
//
//   node tooling/mutants/run.mjs [--baseline] [name …]
//
// The copy: packages/<driver> (without node_modules and dist) in a temporary directory, its
// node_modules, dist and the rest of the repository linked to this checkout's, so the suite is this
// checkout's built @rowclaim/conformance (run `pnpm build` first) and only the copy's src/ is
// planted. Child processes of the suite (crash and several-process tests) load the driver's
// dist/, unplanted. --baseline first runs every filter once on an unplanted copy, each of which
// must pass. The databases are those of the tests (ROWCLAIM_POSTGRES_URL, ROWCLAIM_MYSQL_URL).
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { mutants } from "./catalogue.mjs";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const args = process.argv.slice(2);
const baseline = args.includes("--baseline");
const only = args.filter((arg) => !arg.startsWith("--"));
const chosen = only.length === 0 ? mutants : mutants.filter((mutant) => only.includes(mutant.name));
const unknown = only.filter((name) => !mutants.some((mutant) => mutant.name === name));
if (unknown.length > 0) {
  console.error(`No planted bug named ${unknown.join(", ")}.`);
  process.exit(2);
}

/** A throwaway copy of packages/<driver> (its src/ and test/ copied, everything else linked). */
function copyOf(driver) {
  const root = mkdtempSync(join(tmpdir(), `rowclaim-mutant-${driver}-`));
  for (const entry of readdirSync(repo)) {
    if (entry === "packages" || entry === ".git") continue;
    symlinkSync(join(repo, entry), join(root, entry));
  }
  symlinkSync(join(repo, ".git"), join(root, ".git"));
  const packages = join(root, "packages");
  mkdirSync(packages);
  for (const name of readdirSync(join(repo, "packages"))) {
    if (name !== driver) {
      symlinkSync(join(repo, "packages", name), join(packages, name));
      continue;
    }
    cpSync(join(repo, "packages", name), join(packages, name), {
      recursive: true,
      filter: (source) => !/\/(node_modules|dist)$/.test(source),
    });
    for (const linked of ["node_modules", "dist"]) {
      const real = join(repo, "packages", name, linked);
      if (existsSync(real)) symlinkSync(real, join(packages, name, linked));
    }
  }
  return { root, dir: join(packages, driver) };
}

/** Applies `edits` in `dir`; returns the problems (a search text not found exactly once). */
function plant(dir, edits) {
  const problems = [];
  for (const { file, search, replace } of edits) {
    const path = join(dir, file);
    const text = readFileSync(path, "utf8");
    const count = text.split(search).length - 1;
    if (count !== 1) {
      problems.push(`${file}: the text to replace occurs ${count} times (the catalogue entry is stale)`);
      continue;
    }
    writeFileSync(
      path,
      text.replace(search, () => replace),
    );
  }
  return problems;
}

/** Runs the driver's conformance test file in `dir` with name filter `tests`; the vitest JSON report. */
function runSuite(dir, tests) {
  const report = join(dir, "mutant-report.json");
  const env = { ...process.env };
  delete env.ROWCLAIM_TEST_REPORT_DIR;
  const result = spawnSync(
    "npx",
    ["vitest", "run", "test/conformance.test.ts", "-t", tests, "--reporter=json", `--outputFile=${report}`],
    { cwd: dir, env, encoding: "utf8", timeout: 20 * 60_000 },
  );
  if (!existsSync(report)) {
    return {
      failed: [],
      passed: 0,
      error: `vitest wrote no report (exit ${result.status})\n${result.stderr.slice(-2000)}`,
    };
  }
  const json = JSON.parse(readFileSync(report, "utf8"));
  const all = json.testResults.flatMap((file) => file.assertionResults);
  return {
    failed: all.filter((test) => test.status === "failed").map((test) => test.title),
    passed: all.filter((test) => test.status === "passed").length,
    error: undefined,
  };
}

const started = Date.now();
const seconds = (from) => `${Math.round((Date.now() - from) / 1000)} s`;
let broken = false;

if (baseline) {
  const filters = new Map();
  for (const mutant of chosen) filters.set(`${mutant.driver}\u0000${mutant.tests}`, mutant);
  for (const { driver, tests } of filters.values()) {
    const from = Date.now();
    const { root, dir } = copyOf(driver);
    const outcome = runSuite(dir, tests);
    rmSync(root, { recursive: true, force: true });
    const ok = outcome.error === undefined && outcome.failed.length === 0 && outcome.passed > 0;
    if (!ok) broken = true;
    console.log(
      `baseline ${driver} -t "${tests}": ${ok ? `${outcome.passed} passed` : `FAILED ${outcome.error ?? outcome.failed.join("; ")}`} (${seconds(from)})`,
    );
  }
  if (broken) {
    console.log("The unplanted drivers fail the filtered runs: fix that first.");
    process.exit(1);
  }
}

const escaped = [];
for (const mutant of chosen) {
  const from = Date.now();
  const { root, dir } = copyOf(mutant.driver);
  const problems = plant(dir, mutant.edits);
  let line;
  if (problems.length > 0) {
    escaped.push(mutant.name);
    line = `STALE   ${mutant.name}: ${problems.join("; ")}`;
  } else {
    const outcome = runSuite(dir, mutant.tests);
    if (outcome.error !== undefined) {
      escaped.push(mutant.name);
      line = `ERROR   ${mutant.name}: ${outcome.error}`;
    } else if (outcome.failed.length === 0) {
      escaped.push(mutant.name);
      line = `ESCAPED ${mutant.name} (${mutant.driver}): ${outcome.passed} tests passed`;
    } else {
      line = `caught  ${mutant.name} (${mutant.driver}): ${outcome.failed.length} failed, e.g. "${outcome.failed[0]}"`;
    }
  }
  rmSync(root, { recursive: true, force: true });
  console.log(`${line} (${seconds(from)})`);
}

console.log(
  escaped.length === 0
    ? `${chosen.length} planted bugs, all caught (${seconds(started)})`
    : `${chosen.length} planted bugs, ${escaped.length} not caught: ${escaped.join(", ")} (${seconds(started)})`,
);
process.exit(escaped.length === 0 ? 0 : 1);
