/**
 * Shared test fixtures: the test database, unique table names, table descriptions of each form,
 * and waiting on conditions (never on fixed sleeps).
 */
import { defineTable, type TableDefinition, type TableDescription } from "@rowclaim/core";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import pg from "pg";
import { createPostgresDriver, type PostgresDriver, quoteIdent, schemaSql } from "../src/index.js";

/** The test database's URL. */
export function testUrl(): Promise<string> {
  return databaseUrl("postgres");
}

/** A table name no other test (or helper) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}

/** The columns of the recommended table, by role. */
export const fullColumns = {
  id: "id",
  payload: "payload",
  attempt: "attempt",
  runAt: "run_at",
  priority: "priority",
  group: "queue",
} as const;

/** Describes a table of `form` with the recommended columns. */
export function describeTable(
  form: "rowLock" | "lease" | "advisory",
  name: string,
  extra: Partial<TableDescription> = {},
): TableDefinition {
  const base: TableDescription = {
    name,
    columns: form === "lease" ? { ...fullColumns, lockedUntil: "locked_until" } : { ...fullColumns },
    ...(form === "advisory" ? { advisoryLock: `${name}-{account}`, extraColumns: ["account"] } : {}),
    ...(form === "lease" ? { lease: 1 } : {}),
  };
  return defineTable({ ...base, ...extra });
}

/** A connection pool of the test's own, outside any broker. */
export class TestDb {
  readonly pool: pg.Pool;
  readonly url: string;
  readonly #tables = new Set<TableDefinition>();

  private constructor(url: string) {
    this.url = url;
    this.pool = new pg.Pool({ connectionString: url, max: 4, application_name: "rowclaim-test-admin" });
    this.pool.on("error", () => {});
  }

  static async open(): Promise<TestDb> {
    return new TestDb(await testUrl());
  }

  /** Creates `table` with the recommended schema (dropped again by {@link TestDb.close}). */
  async create(table: TableDefinition): Promise<TableDefinition> {
    this.#tables.add(table);
    await this.pool.query(schemaSql(table));
    return table;
  }

  /** A driver on a pool of its own, with a unique application_name to find its sessions. */
  driver(options: { max?: number; notify?: boolean; applicationName?: string } = {}): PostgresDriver {
    return createPostgresDriver({
      url: this.url,
      max: options.max ?? 10,
      applicationName: options.applicationName ?? uniqueName("rc"),
      notify: options.notify ?? false,
    });
  }

  async rows(table: TableDefinition): Promise<Record<string, unknown>[]> {
    const ref =
      table.schema === undefined
        ? quoteIdent(table.name)
        : `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`;
    const result = await this.pool.query(`SELECT * FROM ${ref} ORDER BY ${quoteIdent(table.columns.id)}`);
    return result.rows;
  }

  async query(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    return (await this.pool.query(text, values)).rows;
  }

  async close(): Promise<void> {
    for (const table of this.#tables) {
      const ref =
        table.schema === undefined
          ? quoteIdent(table.name)
          : `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`;
      await this.pool.query(`DROP TABLE IF EXISTS ${ref}`).catch(() => undefined);
    }
    await this.pool.end();
  }
}

/** Waits until `condition` holds, checking every `interval` ms; fails after `timeout` ms. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  {
    timeout = 30_000,
    interval = 25,
    what = "condition",
  }: { timeout?: number; interval?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** A promise with its resolve function, for handlers that wait for the test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
