import { defineConfig } from "vitest/config";
import { vitestConfig } from "./vitest.shared.mjs";

export default defineConfig(vitestConfig("tooling", { include: ["test/**/*.test.mjs"] }));
