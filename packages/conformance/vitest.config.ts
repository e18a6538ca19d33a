// The conformance package's tests, in one run under coverage: the suite on the in-memory
// reference driver, the broken-driver meta-tests and core's runtime tests on it (memory-*), and
// the suite's own helpers. `@rowclaim/core` (and its subpaths) resolves to its TypeScript source
// here, so that the coverage figures are those of `packages/core/src`: the line coverage of core's
// subscription and claim runtimes from these database-free tests. A file below its threshold
// fails the run (and CI, which runs `pnpm test`).
import { fileURLToPath } from "node:url";
import { vitestConfig } from "@rowclaim/tooling/vitest";
import { defineConfig } from "vitest/config";

const coreSource = fileURLToPath(new URL("../core/src/", import.meta.url));
const shared = vitestConfig("conformance");

/** The files measured: the subscription (split into `subscription-*.ts`), the form runtimes and the ack carrier. */
const measured = ["subscription*.ts", "*-runtime.ts", "ack-carrier.ts"];

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
      // Types only: never loaded, so nothing to measure.
      exclude: [`${coreSource}subscription-handle.ts`],
      reporter: ["text"],
      reportOnFailure: true,
      thresholds: { lines: 90, perFile: false },
    },
  },
});
