/**
 * Helpers for the MySQL driver's tests: the database URL, an admin connection of the tests' own,
 * unique table names, fresh tables, and waiting on conditions.
 */
import { randomBytes } from "node:crypto";
import { defineTable, type TableDefinition, type TableDescription } from "@rowclaim/core";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { createPool, type Pool } from "mysql2/promise";
import { createMysqlDriver, type MysqlDriver, ownPoolOptions } from "../src/index.js";

/** The URL of the MariaDB/MySQL server the tests run against. */
export function mysqlUrl(): Promise<string> {
  return databaseUrl("mysql");
}

/** A pool of the tests' own, able to run several statements at once. */
export async function adminPool(): Promise<Pool> {
  return createPool({
    uri: await mysqlUrl(),
    ...ownPoolOptions,
    multipleStatements: true,
    connectionLimit: 4,
  });
}

/** A table name no other test (or helper) uses. */
export function uniqueName(prefix: string): string {
  return `rcm_${prefix}_${randomBytes(4).toString("hex")}`;
}

/** A driver on its own pool. */
export async function newDriver(connectionLimit = 10): Promise<MysqlDriver> {
  return createMysqlDriver({ url: await mysqlUrl(), connectionLimit });
}

/** Creates tables with the driver's schemaSql and drops them all at the end. */
export class Tables {
  readonly #admin: Pool;
  readonly #driver: MysqlDriver;
  readonly #made: TableDefinition[] = [];

  constructor(admin: Pool, driver: MysqlDriver) {
    this.#admin = admin;
    this.#driver = driver;
  }

  /** Defines `description` and creates its table (and nothing else). */
  async create(description: TableDescription, ddl?: string): Promise<TableDefinition> {
    const table = defineTable(description);
    await this.#admin.query(ddl ?? this.#driver.schemaSql(table));
    this.#made.push(table);
    return table;
  }

  async dropAll(): Promise<void> {
    for (const table of this.#made.splice(0)) {
      await this.#admin.query(`DROP TABLE IF EXISTS ${quote(table.name)}`);
    }
  }
}

/** Backtick quoting for the tests' own statements. */
export function quote(name: string): string {
  return `\`${name.replaceAll("`", "``")}\``;
}

/** Waits until `condition` holds, checking every 20 ms, up to `timeout` ms. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeout = 30_000,
  what = "a condition",
): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every row of `table`, ordered by id. */
export async function readAll(admin: Pool, table: TableDefinition): Promise<Record<string, unknown>[]> {
  const [rows] = await admin.query(`SELECT * FROM ${quote(table.name)} ORDER BY ${quote(table.columns.id)}`);
  return rows as Record<string, unknown>[];
}
