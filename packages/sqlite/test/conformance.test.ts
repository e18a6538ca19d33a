// Runs the shared conformance suite on the SQLite driver, exactly as a third-party driver would.
import { fileURLToPath } from "node:url";
import { runConformance } from "@rowclaim/conformance";
import type { TableDefinition } from "@rowclaim/core";
import { createSqliteDriver, quoteIdentifier } from "../src/index.js";
import { openConnection, tempDatabaseFile } from "./support.js";

const temp = tempDatabaseFile("rowclaim-sqlite-conformance-");
// Child processes inherit the environment: child-driver.mjs opens the same file.
process.env.ROWCLAIM_SQLITE_FILE = temp.file;
const admin = openConnection(temp.file);

const tableName = (table: TableDefinition): string =>
  table.schema === undefined
    ? quoteIdentifier(table.name)
    : `${quoteIdentifier(table.schema)}.${quoteIdentifier(table.name)}`;

runConformance({
  name: "sqlite",
  createDriver: () => createSqliteDriver({ filename: temp.file }),
  execute: async (sql) => {
    admin.exec(sql);
  },
  readRows: async (table) =>
    admin
      .prepare(`SELECT * FROM ${tableName(table)} ORDER BY ${quoteIdentifier(table.columns.id)}`)
      .all() as Record<string, unknown>[],
  dropTable: async (table) => {
    admin.exec(`DROP TABLE IF EXISTS ${tableName(table)}`);
  },
  // The client publish({ client }) takes: a better-sqlite3 Database of the tests' own, in an
  // explicit transaction. A connection apart from `admin`, so that readRows (on `admin`) does not
  // see the rows before the transaction commits.
  inTransaction: async (body, { rollback }) => {
    const connection = openConnection(temp.file);
    try {
      connection.exec("BEGIN IMMEDIATE");
      try {
        await body(connection);
      } catch (error) {
        connection.exec("ROLLBACK");
        throw error;
      }
      connection.exec(rollback ? "ROLLBACK" : "COMMIT");
    } finally {
      connection.close();
    }
  },
  childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
  close: async () => {
    admin.close();
    temp.remove();
  },
});
