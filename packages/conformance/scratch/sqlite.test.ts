import { mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSqliteDriver } from "../../sqlite/dist/index.js";
import { runConformance } from "../src/index.js";

const require = createRequire(fileURLToPath(new URL("../../sqlite/package.json", import.meta.url)));
const Database = require("better-sqlite3");
const file = join(mkdtempSync(join(tmpdir(), "scratch-conf-")), "q.db");
process.env.SCRATCH_SQLITE_FILE = file;
const admin = new Database(file, { timeout: 5000 });
admin.pragma("journal_mode = WAL");
const q = (s: string) => `"${s.replaceAll('"', '""')}"`;

runConformance({
  name: "sqlite",
  createDriver: () => createSqliteDriver({ filename: file }),
  execute: async (sql) => {
    admin.exec(sql);
  },
  readRows: async (table) =>
    admin.prepare(`SELECT * FROM ${q(table.name)} ORDER BY ${q(table.columns.id)}`).all(),
  dropTable: async (table) => {
    admin.exec(`DROP TABLE IF EXISTS ${q(table.name)}`);
  },
  childDriverModule: fileURLToPath(new URL("./sqlite-child-driver.mjs", import.meta.url)),
  close: async () => {
    admin.close();
  },
});
