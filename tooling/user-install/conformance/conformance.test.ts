// A third party's run of the published conformance suite: the harness is written here, outside
// the rowclaim workspace, against the packed @rowclaim/postgres, exactly as the conformance
// README tells a driver author to write one.
import { fileURLToPath } from "node:url";
import { runConformance } from "@rowclaim/conformance";
import type { TableDefinition } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";
import pg from "pg";

const url = process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
process.env.ROWCLAIM_POSTGRES_URL = url;
const admin = new pg.Pool({ connectionString: url, max: 4 });
admin.on("error", () => {});

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const ref = (table: TableDefinition): string =>
  table.schema === undefined ? quote(table.name) : `${quote(table.schema)}.${quote(table.name)}`;

runConformance({
  name: "postgres (installed from the packed tarballs)",
  createDriver: () => createPostgresDriver({ url, max: 12, notify: true }),
  execute: async (sql) => {
    await admin.query(sql);
  },
  readRows: async (table) =>
    (await admin.query(`SELECT * FROM ${ref(table)} ORDER BY ${quote(table.columns.id)}`)).rows,
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
  // The one opt-out: the workspace's load step runs the heap test on this driver.
  skip: {
    "[lease] draining 100,000 rows through one subscription keeps the heap flat":
      "the heap test runs in the repository's load step (ROWCLAIM_LOAD=1); this run checks the packed packages",
  },
  close: () => admin.end(),
});
