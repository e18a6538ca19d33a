/**
 * Shared test fixtures: the test database, unique table names, table descriptions of each form,
 * and waiting on conditions (never on fixed sleeps).
 */
import {
  createBroker,
  defineTable,
  silentLogger,
  type TableDefinition,
  type TableDescription,
} from "@rowclaim/core";
import type { Claimer, ClaimRequest } from "@rowclaim/core/driver";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { createPostgresDriver, type PostgresDriver, quoteIdent, schemaSql } from "../src/index.js";
import type { PoolClientLike, PoolLike, QueryConfigLike, QueryResultLike } from "../src/pool-like.js";

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
  #pool: pg.Pool | undefined;
  #url: string | undefined;
  readonly #tables = new Set<TableDefinition>();

  private constructor(url?: string) {
    if (url !== undefined) this.#connect(url);
  }

  #connect(url: string): void {
    this.#url = url;
    this.#pool = new pg.Pool({ connectionString: url, max: 4, application_name: "rowclaim-test-admin" });
    this.#pool.on("error", () => {});
  }

  /** The test's own pool; throws before the database is open. */
  get pool(): pg.Pool {
    if (this.#pool === undefined) throw new Error("the test database is not open yet");
    return this.#pool;
  }

  /** The test database's URL; throws before the database is open. */
  get url(): string {
    if (this.#url === undefined) throw new Error("the test database is not open yet");
    return this.#url;
  }

  static async open(): Promise<TestDb> {
    return new TestDb(await testUrl());
  }

  /**
   * The test database for the calling test file: opened in the file's `beforeAll`, closed (its
   * tables dropped) in its `afterAll`. Call it at the top level of a test file, once.
   */
  static forFile(): TestDb {
    const db = new TestDb();
    beforeAll(async () => {
      db.#connect(await testUrl());
    });
    afterAll(async () => {
      await db.close();
    });
    return db;
  }

  /** Creates `table` with the recommended schema (dropped again by {@link TestDb.close}). */
  async create(table: TableDefinition): Promise<TableDefinition> {
    this.#tables.add(table);
    await this.pool.query(schemaSql(table));
    return table;
  }

  /** A driver on a pool of its own, with a unique application_name to find its sessions. */
  driver(
    options: { max?: number; notify?: boolean; watchControls?: boolean; applicationName?: string } = {},
  ): PostgresDriver {
    return createPostgresDriver({
      url: this.url,
      max: options.max ?? 10,
      applicationName: options.applicationName ?? uniqueName("rc"),
      notify: options.notify ?? false,
      ...(options.watchControls === undefined ? {} : { watchControls: options.watchControls }),
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

/** Publishes `count` rows (payload 0..count-1, advisory rows on account `acc<n>`) through a broker on `driver`. */
export async function publishRows(
  driver: PostgresDriver,
  table: TableDefinition,
  count: number,
): Promise<void> {
  const broker = createBroker({ driver, logger: silentLogger });
  await broker.publishMany(
    table,
    Array.from({ length: count }, (_, n) => ({
      payload: n,
      ...(table.form === "advisory" ? { values: { account: `acc${n}` } } : {}),
    })),
  );
}

/** Opens `driver`'s claimer of `table` (no group, a silent logger) as the form's claimer `C` the test works with. */
export async function openClaimer<C extends Claimer>(
  driver: PostgresDriver,
  table: TableDefinition,
): Promise<C> {
  return (await driver.open(table, { group: null, logger: silentLogger })) as C;
}

/** Claims a row lock batch of at most `limit` rows now; throws when nothing was claimed. */
export async function claimBatch<B>(
  claimer: { claim(request: ClaimRequest): Promise<B | null> },
  limit: number,
): Promise<B> {
  const batch = await claimer.claim({ limit, now: new Date() });
  if (batch === null) throw new Error("nothing claimed");
  return batch;
}

/** Sends one statement on its way: the connection's own `query`, for a {@link StatementInterceptor} to call. */
export type RunStatement = (config: QueryConfigLike) => Promise<QueryResultLike>;

/** Sees each statement a pool sends: does its own work around `run(config)` and returns its result. */
export type StatementInterceptor = (config: QueryConfigLike, run: RunStatement) => Promise<QueryResultLike>;

/**
 * `pool` as a driver's pool whose checked-out clients send every statement through `intercept`;
 * statements run on the pool itself (`pool.query`) go through it too when `poolQueries` is set.
 */
export function interceptedPool(
  pool: pg.Pool,
  intercept: StatementInterceptor,
  { poolQueries = false }: { poolQueries?: boolean } = {},
): PoolLike {
  const direct: RunStatement = (config) => pool.query(config as pg.QueryConfig);
  return {
    query: poolQueries ? (config) => intercept(config, direct) : direct,
    end: () => pool.end(),
    async connect(): Promise<PoolClientLike> {
      const client = await pool.connect();
      const query = client.query.bind(client) as RunStatement;
      return new Proxy(client, {
        get(target, property, receiver) {
          if (property !== "query") return Reflect.get(target, property, receiver);
          return (config: QueryConfigLike) => intercept(config, query);
        },
      }) as unknown as PoolClientLike;
    },
  };
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
