import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe } from "vitest";
import { createSqliteDriver } from "../../sqlite/dist/index.js";
import { type ConformanceHarness, declarationSuite } from "../src/index.js";

const require = createRequire(fileURLToPath(new URL("../../sqlite/package.json", import.meta.url)));
const Database = require("better-sqlite3");
const file = join(mkdtempSync(join(tmpdir(), "scratch-opt-")), "q.db");
const admin = new Database(file, { timeout: 5000 });
const q = (s: string) => `"${s.replaceAll('"', '""')}"`;
const harness: ConformanceHarness = {
  name: "optout",
  createDriver: () => createSqliteDriver({ filename: file }),
  execute: async (sql) => {
    admin.exec(sql);
  },
  readRows: async (table) =>
    admin.prepare(`SELECT * FROM ${q(table.name)} ORDER BY ${q(table.columns.id)}`).all(),
  dropTable: async (table) => {
    admin.exec(`DROP TABLE IF EXISTS ${q(table.name)}`);
  },
  skip: {
    "a description with fifo beside advisoryLock is refused with DECLARATION": "testing opt-outs",
    "no such test": "stale",
  },
};
describe("mine", () => {
  declarationSuite(harness);
  afterAll(() => admin.close());
});
