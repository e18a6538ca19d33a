import { fileURLToPath } from "node:url";
import { type ConformanceHarness, runConformance } from "@rowclaim/conformance";
import type { TableDefinition } from "@rowclaim/core";
import { createPool, type Pool } from "mysql2/promise";
import { createMysqlDriver, ownPoolOptions, quoteTable } from "../src/index.js";
import { mysqlUrl } from "./support.js";

const url = await mysqlUrl();
let admin: Pool | undefined;

/** The tests' own pool: multi-statement DDL, read back as the driver's own pool reads. */
function adminConnection(): Pool {
  admin ??= createPool({ uri: url, ...ownPoolOptions, multipleStatements: true, connectionLimit: 2 });
  return admin;
}

const harness: ConformanceHarness = {
  name: "mysql (MariaDB)",
  createDriver: () => createMysqlDriver({ url, connectionLimit: 12 }),
  async execute(sql) {
    await adminConnection().query(sql);
  },
  async readRows(table: TableDefinition) {
    const [rows] = await adminConnection().query(
      `SELECT * FROM ${quoteTable(table.name, table.schema)} ORDER BY \`${table.columns.id.replaceAll("`", "``")}\``,
    );
    return rows as Record<string, unknown>[];
  },
  async dropTable(table: TableDefinition) {
    await adminConnection().query(`DROP TABLE IF EXISTS ${quoteTable(table.name, table.schema)}`);
  },
  // The client publish({ client }) takes: a mysql2/promise connection of the tests' own pool, in a
  // transaction opened here (readRows reads on the pool's other connection, outside it).
  async inTransaction(body, { rollback }) {
    const connection = await adminConnection().getConnection();
    try {
      await connection.beginTransaction();
      try {
        await body(connection);
      } catch (error) {
        await connection.rollback();
        throw error;
      }
      await (rollback ? connection.rollback() : connection.commit());
    } finally {
      connection.release();
    }
  },
  childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
  async close() {
    await admin?.end();
    admin = undefined;
  },
};

runConformance(harness);
