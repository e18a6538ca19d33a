import { defineConfig } from "vitest/config";
export default defineConfig({
  test: { include: ["scratch/**/*.test.ts"], testTimeout: 90_000, hookTimeout: 60_000 },
});
