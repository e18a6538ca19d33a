// The three databases the dashboard's tests open it over: a fresh table on each (a unique
// name, since other tests share the servers), a driver for the dashboard and one per worker
// broker (as separate processes would have), and an admin client the tests check the
// database with.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Driver, defineTable, type TableDefinition } from "@rowclaim/core";
import { createMysqlDriver } from "@rowclaim/mysql";
import { createPostgresDriver } from "@rowclaim/postgres";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import pg from "pg";

/** The databases the tests cover. */
export type DatabaseKind = "sqlite" | "postgres" | "mysql";

/** A fresh table on one database, with what the tests need around it. */
export interface TestDatabase {
  readonly kind: DatabaseKind;
  readonly table: TableDefinition;
  /** A new driver on the database (the caller closes it, or `close()` does). */
  driver(): Driver;
  /** Runs a read and returns its rows (`?` placeholders; rewritten to `$n` on PostgreSQL). */
  query(sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
  /** The table's name, quoted for this database. */
  readonly quoted: string;
  /** Drops the table, closes the drivers made and the admin client. */
  close(): Promise<void>;
}

/** A table name no other test uses. */
export function uniqueName(label: string): string {
  return `rc_dash_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * The dashboard tests' table: lease form (every database offers it, and a claim writes the row),
 * with groups, headers, processed rows kept, and a dead-letter group after two attempts.
 */
export function testTable(name: string): TableDefinition {
  return defineTable({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      priority: "priority",
      group: "queue",
      processedAt: "processed_at",
      lockedUntil: "locked_until",
      headers: "headers",
    },
    lease: 5,
    maxAttempts: 2,
    deadLetter: { group: "dead" },
  });
}

/** Opens a fresh test table on `kind`. */
export async function openDatabase(kind: DatabaseKind, label: string): Promise<TestDatabase> {
  const table = testTable(uniqueName(label));
  const drivers: Driver[] = [];
  const track = <D extends Driver>(driver: D): D => {
    drivers.push(driver);
    return driver;
  };
  const closeDrivers = async () => {
    for (const driver of drivers.splice(0)) await driver.close().catch(() => undefined);
  };
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "rowclaim-dashboard-"));
    const filename = join(dir, "queue.db");
    const admin = new Database(filename);
    admin.pragma("journal_mode = WAL");
    admin.pragma("busy_timeout = 5000");
    const schemaDriver = createSqliteDriver({ filename });
    admin.exec(schemaDriver.schemaSql(table));
    await schemaDriver.close();
    return {
      kind,
      table,
      driver: () => track(createSqliteDriver({ filename })),
      query: async (sql, params = []) => admin.prepare(sql).all(...params) as Record<string, unknown>[],
      quoted: `"${table.name}"`,
      close: async () => {
        await closeDrivers();
        admin.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (kind === "postgres") {
    const url = await databaseUrl("postgres");
    const admin = new pg.Pool({ connectionString: url, max: 2 });
    admin.on("error", () => undefined);
    const schemaDriver = createPostgresDriver({ url });
    await admin.query(schemaDriver.schemaSql(table));
    await schemaDriver.close();
    return {
      kind,
      table,
      driver: () => track(createPostgresDriver({ url, max: 6 })),
      query: async (sql, params = []) => {
        let index = 0;
        const text = sql.replace(/\?/g, () => `$${++index}`);
        return (await admin.query(text, [...params])).rows as Record<string, unknown>[];
      },
      quoted: `"${table.name}"`,
      close: async () => {
        await closeDrivers();
        await admin.query(`DROP TABLE IF EXISTS "${table.name}"`).catch(() => undefined);
        await admin.end();
      },
    };
  }
  const url = await databaseUrl("mysql");
  const admin = mysql.createPool({ uri: url, connectionLimit: 2, multipleStatements: true });
  const schemaDriver = createMysqlDriver({ url });
  await admin.query(schemaDriver.schemaSql(table));
  await schemaDriver.close();
  return {
    kind,
    table,
    driver: () => track(createMysqlDriver({ url, connectionLimit: 6 })),
    query: async (sql, params = []) => {
      const [rows] = await admin.query(sql, [...params]);
      return rows as Record<string, unknown>[];
    },
    quoted: `\`${table.name}\``,
    close: async () => {
      await closeDrivers();
      await admin.query(`DROP TABLE IF EXISTS \`${table.name}\``).catch(() => undefined);
      await admin.end();
    },
  };
}
