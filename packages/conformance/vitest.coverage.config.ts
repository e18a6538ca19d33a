// Line coverage of core's subscription and claim runtimes from the database-free tests: the
// conformance suite on the in-memory reference driver, the broken-driver meta-tests and core's
// runtime tests on it. `@rowclaim/core` resolves to its TypeScript source here, so that the
// figures are those of `packages/core/src`. Run with `pnpm --filter @rowclaim/conformance coverage`.
import { fileURLToPath } from "node:url";
import { vitestConfig } from "@rowclaim/tooling/vitest";
import { defineConfig } from "vitest/config";

const coreSource = fileURLToPath(new URL("../core/src/", import.meta.url));
const shared = vitestConfig("conformance-coverage", { include: ["test/memory-*.test.ts"] });

export default defineConfig({
  resolve: { alias: [{ find: /^@rowclaim\/core$/, replacement: `${coreSource}index.ts` }] },
  test: {
    ...shared.test,
    coverage: {
      provider: "v8",
      allowExternal: true,
      include: [`${coreSource}subscription*.ts`, `${coreSource}*-runtime.ts`],
      reporter: ["text"],
    },
  },
});
