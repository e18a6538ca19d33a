import { vitestConfig } from "@rowclaim/tooling/vitest";
import { defineConfig } from "vitest/config";

// `vitest run` also type-checks test/*.test-d.ts (inference and refusals of typed tables): a
// failed `expectTypeOf` or an unused `@ts-expect-error` fails the run.
export default defineConfig(
  vitestConfig("core", {
    typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.test.json" },
  }),
);
