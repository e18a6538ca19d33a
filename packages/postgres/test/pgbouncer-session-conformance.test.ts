import { fileURLToPath } from "node:url";
import { runConformance } from "@rowclaim/conformance";
import type { TableDefinition } from "@rowclaim/core";
import pg from "pg";
import { createPostgresDriver, quoteIdent } from "../src/index.js";
import { pgbouncerUrls } from "./pgbouncer-env.js";

// The whole suite, through PgBouncer in session mode (tooling/pgbouncer.sh).
const url = pgbouncerUrls().session;
// Child processes of the crash tests inherit the environment and read the URL from it.
process.env.ROWCLAIM_POSTGRES_URL = url;

const admin = new pg.Pool({ connectionString: url, max: 4, application_name: "rowclaim-pgbouncer-admin" });
admin.on("error", () => {});

function ref(table: TableDefinition): string {
  return table.schema === undefined
    ? quoteIdent(table.name)
    : `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`;
}

runConformance({
  name: "postgres via PgBouncer (session mode)",
  // notify: true, so that the suite's cross-process wake-up test runs too (the child's driver notifies as well).
  createDriver: () => createPostgresDriver({ url, max: 12, notify: true }),
  execute: async (sql) => {
    await admin.query(sql);
  },
  readRows: async (table) =>
    (await admin.query(`SELECT * FROM ${ref(table)} ORDER BY ${quoteIdent(table.columns.id)}`)).rows,
  dropTable: async (table) => {
    await admin.query(`DROP TABLE IF EXISTS ${ref(table)}`);
  },
  inTransaction: async (body, options) => {
    const client = await admin.connect();
    try {
      await client.query("BEGIN");
      try {
        await body(client);
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
      await client.query(options.rollback ? "ROLLBACK" : "COMMIT");
    } finally {
      client.release();
    }
  },
  childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
  close: () => admin.end(),
});
