/**
 * Helpers for the MySQL driver's tests: the database URL, an admin connection of the tests' own,
 * unique table names, fresh tables, the per-file fixture, and waiting on conditions.
 */
import { randomBytes } from "node:crypto";
import { ack, defineTable, type Outcome, type TableDefinition, type TableDescription } from "@rowclaim/core";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { createPool, type Pool } from "mysql2/promise";
import { afterAll, beforeAll } from "vitest";
import { createMysqlDriver, type MysqlDriver, ownPoolOptions } from "../src/index.js";
import type { ConnectionLike, PoolLike, QueryOptionsLike } from "../src/pool-like.js";

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

/** What {@link useMysqlFixture} sets up for a test file, readable once its `beforeAll` has run. */
export interface MysqlFixture {
  /** The tests' own multi-statement pool. */
  readonly admin: Pool;
  /** A driver on its own pool: writes the tables' DDL, and tests may claim through it too. */
  readonly driver: MysqlDriver;
  /** The file's tables, dropped after its last test. */
  readonly tables: Tables;
}

/**
 * Registers the `beforeAll`/`afterAll` hooks of a test file that creates tables: an admin pool, a
 * driver with `connectionLimit` connections and a {@link Tables} on them; after the last test the
 * tables are dropped, the driver closed and the pool ended.
 */
export function useMysqlFixture(connectionLimit = 2): MysqlFixture {
  let state: { admin: Pool; driver: MysqlDriver; tables: Tables } | undefined;

  beforeAll(async () => {
    const admin = await adminPool();
    const driver = await newDriver(connectionLimit);
    state = { admin, driver, tables: new Tables(admin, driver) };
  });

  afterAll(async () => {
    if (state === undefined) return;
    const { admin, driver, tables } = state;
    state = undefined;
    await tables.dropAll();
    await driver.close();
    await admin.end();
  });

  const ready = () => {
    if (state === undefined)
      throw new Error("useMysqlFixture: read the fixture inside a test or a later hook.");
    return state;
  };
  return {
    get admin() {
      return ready().admin;
    },
    get driver() {
      return ready().driver;
    },
    get tables() {
      return ready().tables;
    },
  };
}

/** A handler that keeps every delivery in work until {@link HeldHandler.release}, then acks it. */
export class HeldHandler {
  /** Whether a delivery has reached the handler. */
  running = false;
  /** Lets every delivery held now or later go on (and be acked). Safe to call more than once. */
  readonly release: () => void;
  readonly #released: Promise<void>;

  constructor() {
    let release!: () => void;
    this.#released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.release = release;
  }

  /** The handler to subscribe with. */
  readonly handle = async (): Promise<Outcome> => {
    this.running = true;
    await this.#released;
    return ack();
  };
}

/** The columns of a lease table with a run-at column, by role. */
export const leaseColumns = {
  id: "id",
  payload: "payload",
  attempt: "attempt",
  runAt: "run_at",
  lockedUntil: "locked_until",
} as const;

/** A real mysql2 pool whose checked-out connections record every statement they run. */
export function recordingPool(pool: PoolLike, statements: string[]): PoolLike {
  return {
    query: (statement: QueryOptionsLike | string, values?: unknown[]) =>
      typeof statement === "string" ? pool.query(statement, values) : pool.query(statement),
    end: () => pool.end(),
    async getConnection(): Promise<ConnectionLike> {
      const connection = await pool.getConnection();
      return {
        get threadId() {
          return connection.threadId;
        },
        query(statement: QueryOptionsLike | string, values?: unknown[]) {
          if (typeof statement === "string") {
            statements.push(statement);
            return connection.query(statement, values);
          }
          statements.push(statement.sql);
          return connection.query(statement);
        },
        release: () => connection.release(),
        destroy: () => connection.destroy(),
      };
    },
  };
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
