// The conformance package's tests, in one run under coverage: the suite on the in-memory
// reference driver, the broken-driver meta-tests and core's runtime tests on it (memory-*), and
// the suite's own helpers. `@rowclaim/core` (and its subpaths) resolves to its TypeScript source
// here, so that the coverage figures are those of `packages/core/src`: the line coverage of core's
// subscription and claim runtimes from these database-free tests. A file below its threshold
// fails the run (and CI, which runs `pnpm test`).
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { vitestConfig } from "@rowclaim/tooling/vitest";
import { defineConfig } from "vitest/config";

const coreSource = fileURLToPath(new URL("../core/src/", import.meta.url));
const shared = vitestConfig("conformance");

/** The files measured: the subscription (split into `subscription-*.ts`), the form runtimes and the ack carrier. */
const measured = ["subscription*.ts", "*-runtime.ts", "ack-carrier.ts"];
/** Types only: never loaded, so nothing to measure. */
const typesOnly = ["subscription-handle.ts"];
const isMeasured = (name: string): boolean =>
  !typesOnly.includes(name) &&
  (name === "ack-carrier.ts" ||
    (name.startsWith("subscription") && name.endsWith(".ts")) ||
    name.endsWith("-runtime.ts"));

/** Line coverage the whole set must reach, and each measured file on its own. */
const SET_LINES = 90;
const FILE_LINES = 85;
const perFile = Object.fromEntries(
  readdirSync(coreSource)
    .filter(isMeasured)
    // Globs of thresholds are matched against paths relative to this package.
    .map((name) => [`../core/src/${name}`, { lines: FILE_LINES }]),
);

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rowclaim\/core$/, replacement: `${coreSource}index.ts` },
      { find: /^@rowclaim\/core\/(.+)$/, replacement: `${coreSource}$1.ts` },
    ],
  },
  test: {
    ...shared.test,
    coverage: {
      enabled: true,
      provider: "v8",
      allowExternal: true,
      include: measured.map((pattern) => `${coreSource}${pattern}`),
      exclude: typesOnly.map((name) => `${coreSource}${name}`),
      reporter: ["text"],
      reportOnFailure: true,
      // The global figure is the whole measured set's; each file also on its own.
      thresholds: { lines: SET_LINES, ...perFile },
    },
  },
});
