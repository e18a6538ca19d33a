import { vitestConfig } from "@rowclaim/tooling/vitest";
import { defineConfig } from "vitest/config";

export default defineConfig(vitestConfig("postgres-js"));
