// A third party's run of the published conformance suite: the harness is written here, outside
// the rowclaim workspace, against the packed @rowclaim/postgres, exactly as the conformance
// README tells a driver author to write one. It proves the tarballs work together (the suite's
// entry points, its child processes through `@rowclaim/conformance/child`, the packed driver and
// core), so it runs a representative set of sub-suites, each on its own as the README allows:
// claims, outcomes, the lease and advisory lock forms, row lock batches, payloads, errors and the
// crash tests (child processes). The workspace's own run (packages/postgres/test/conformance.test.ts)
// runs the whole suite on the same driver and proves its behaviour.
import { fileURLToPath } from "node:url";
import {
  advisorySuite,
  batchSuite,
  type ConformanceHarness,
  claimsSuite,
  crashSuite,
  errorsSuite,
  leaseSuite,
  outcomesSuite,
  payloadSuite,
} from "@rowclaim/conformance";
import type { TableDefinition } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";
import pg from "pg";
import { afterAll, describe } from "vitest";

const url = process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
process.env.ROWCLAIM_POSTGRES_URL = url;
const admin = new pg.Pool({ connectionString: url, max: 4 });
admin.on("error", () => {});

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const ref = (table: TableDefinition): string =>
  table.schema === undefined ? quote(table.name) : `${quote(table.schema)}.${quote(table.name)}`;

const harness: ConformanceHarness = {
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
  close: () => admin.end(),
};

describe(`rowclaim conformance: ${harness.name}`, () => {
  claimsSuite(harness);
  outcomesSuite(harness);
  leaseSuite(harness);
  advisorySuite(harness);
  batchSuite(harness);
  payloadSuite(harness);
  errorsSuite(harness);
  crashSuite(harness);
  afterAll(async () => {
    await harness.close?.();
  });
});
