/**
 * A plain connection of the command line's own, beside the broker's driver: it creates and drops
 * the demo's tables and reads counts for `status`. One per command run.
 *
 * @module
 */
import { loadForDialect } from "./driver-packages.js";
import type { Target } from "./target.js";

/** A row as a database client returns it. */
export type SqlRow = Readonly<Record<string, unknown>>;

/** The command line's own connection to the database a {@link Target} names. */
export interface AdminConnection {
  /** The dialect of the database. */
  readonly dialect: Target["dialect"];
  /** Runs one or more statements that take no parameters (DDL). */
  execute(sql: string): Promise<void>;
  /** Runs one statement with parameters and returns its rows. */
  query(sql: string, params?: readonly unknown[]): Promise<SqlRow[]>;
  /** Closes the connection. */
  close(): Promise<void>;
}

/** How an {@link AdminConnection} is opened. */
export interface AdminConnectionOptions {
  /** Open a SQLite file read-only, and refuse one that does not exist (instead of creating it). */
  readonly readOnly?: boolean;
}

/** Opens an {@link AdminConnection} to `target`. */
export async function openAdminConnection(
  target: Target,
  options: AdminConnectionOptions = {},
): Promise<AdminConnection> {
  switch (target.dialect) {
    case "sqlite": {
      const { openSqlite } = await loadForDialect("sqlite", () => import("./sqlite-admin.js"));
      return openSqlite(target.filename, options.readOnly === true);
    }
    case "postgres":
      return openPostgres(target.url);
    case "mysql":
      return openMysql(target.url);
  }
}

async function openPostgres(url: string): Promise<AdminConnection> {
  const { default: pg } = await loadForDialect("postgres", () => import("pg"));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    dialect: "postgres",
    async execute(sql) {
      await client.query(sql);
    },
    async query(sql, params = []) {
      const result = await client.query(sql, [...params]);
      return result.rows as SqlRow[];
    },
    async close() {
      await client.end();
    },
  };
}

async function openMysql(url: string): Promise<AdminConnection> {
  const mysql = await loadForDialect("mysql", () => import("mysql2/promise"));
  const connection = await mysql.createConnection({
    uri: url,
    multipleStatements: true,
    timezone: "Z",
    supportBigNumbers: true,
  });
  return {
    dialect: "mysql",
    async execute(sql) {
      await connection.query(sql);
    },
    async query(sql, params = []) {
      const [rows] = await connection.query(sql, [...params]);
      return Array.isArray(rows) ? (rows as SqlRow[]) : [];
    },
    async close() {
      await connection.end();
    },
  };
}
