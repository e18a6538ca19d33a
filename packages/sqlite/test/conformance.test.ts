// Runs the shared conformance suite on the SQLite driver, exactly as a third-party driver would:
// the whole suite on databases the driver opens and closes, then the sub-suites where ownership
// matters (advisory keys, shutdown, locking) on better-sqlite3 Databases the harness owns, as a
// user passing `{ database }` does.
import { fileURLToPath } from "node:url";
import {
  advisorySuite,
  type ConformanceHarness,
  keyLimitsSuite,
  lockingSuite,
  runConformance,
  shutdownSuite,
} from "@rowclaim/conformance";
import type { TableDefinition } from "@rowclaim/core";
import { heapTestOptOut } from "@rowclaim/tooling/test-env";
import { afterAll, describe } from "vitest";
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

/** The harness; `pools: "user"` runs every broker on a Database the harness opens and closes. */
function sqliteHarness(name: string, tablePrefix: string, pools: "driver" | "user"): ConformanceHarness {
  return {
    name,
    tablePrefix,
    pools,
    createDriver: () => createSqliteDriver({ filename: temp.file }),
    // A better-sqlite3 Database is one connection: the driver never checks one out of it, so
    // nothing can be left checked out; what it could leave behind is a key, which the next
    // broker (on another Database) would wait for.
    createUserPoolDriver: () => {
      const database = openConnection(temp.file);
      return {
        driver: createSqliteDriver({ database }),
        checkedOut: () => 0,
        end: async () => {
          database.close();
        },
      };
    },
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
    // SQLite cannot add a CHECK constraint to a table: a trigger refuses every processedAt value
    // instead (the suite's tables name the column processed_at).
    refuseProcessedAt: async (table, only) => {
      const trigger = quoteIdentifier(`${table.name}_refuse_processed`);
      const which =
        only === undefined ? "" : ` AND NEW.${quoteIdentifier(table.columns.id)} = ${Number(only)}`;
      admin.exec(
        `CREATE TRIGGER ${trigger} BEFORE UPDATE OF ${quoteIdentifier("processed_at")} ON ${tableName(table)} WHEN NEW.${quoteIdentifier("processed_at")} IS NOT NULL${which} BEGIN SELECT RAISE(ABORT, 'processed_at refused by the conformance harness'); END`,
      );
      return async () => {
        admin.exec(`DROP TRIGGER IF EXISTS ${trigger}`);
      };
    },
    childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
  };
}

runConformance({ ...sqliteHarness("sqlite", "rc_", "driver"), skip: heapTestOptOut() });

describe("rowclaim conformance on databases the user owns: sqlite", () => {
  const harness = sqliteHarness("sqlite (user database)", "rcu_", "user");
  advisorySuite(harness);
  keyLimitsSuite(harness);
  shutdownSuite(harness);
  lockingSuite(harness);
});

afterAll(() => {
  admin.close();
  temp.remove();
});
