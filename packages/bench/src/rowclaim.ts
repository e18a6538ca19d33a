/**
 * rowclaim's contenders: each form on PostgreSQL and MariaDB/MySQL and the lease form on SQLite,
 * with the library's defaults (a subscription given only its workers) and the throughput variants.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Broker,
  type ClaimFormName,
  createBroker,
  type Driver,
  type SubscribeOptions,
  type Subscription,
  type TableDefinition,
} from "@rowclaim/core";
import { createMysqlDriver } from "@rowclaim/mysql";
import { createPostgresDriver } from "@rowclaim/postgres";
import { createSqliteDriver } from "@rowclaim/sqlite";
import mysql from "mysql2/promise";
import pg from "pg";
import { benchTable, fillSqliteFile, type SqliteSync } from "./bench-table.js";
import { type Contender, chunks, type DrainRun, payloads, waitUntil, withinDrain } from "./contender.js";

const formLabel: Record<ClaimFormName, string> = {
  lease: "lease",
  rowLock: "row lock",
  advisory: "advisory",
};

/** Describes the subscribe options a contender uses: the workers, plus `extra` (none: the library's defaults). */
function describeSubscribe(extra: SubscribeOptions): string {
  const given = JSON.stringify(extra);
  return given === "{}"
    ? "defaults: subscribe(table, handler, { workers })"
    : `subscribe(table, handler, { workers, ...${given} })`;
}

/**
 * The throughput variant of a rowclaim contender: the one option a user sets for throughput,
 * `prefetch` (rows claimed ahead of the workers and held while they wait for one), as
 * graphile-worker's local queue.
 */
export interface ThroughputVariant {
  /** Rows claimed ahead of the workers (`SubscribeOptions.prefetch`). */
  readonly prefetch: number;
}

/**
 * The rate-limited variant of a rowclaim contender: `subscribe({ rateLimit })` with a limit the
 * drain never reaches, so that its figure is what the rate take (one upsert of the counter row
 * before each claim, one give-back after a claim that took fewer rows) costs a claim.
 */
export interface RateLimitedVariant {
  readonly rateLimit: { readonly limit: number; readonly intervalMs: number };
}

/**
 * The timed part of a rowclaim drain, on any database: from the first claim (`subscribe()`
 * returns once its claim loop has started it) until `jobs` acks are counted; stops the
 * subscription and resolves the acks.
 */
async function drainSubscription(subscription: Subscription, jobs: number, run: DrainRun): Promise<number> {
  run.claiming();
  await withinDrain(run.handled(jobs), "rowclaim's handlers");
  await waitUntil(() => subscription.stats.acked >= jobs, "rowclaim's settlements", 60_000);
  run.settled();
  const done = subscription.stats.acked;
  await subscription.stop();
  return done;
}

/** The id prefix of a server database's contenders. */
const idPrefix = { postgres: "rowclaim-pg", mysql: "rowclaim-mysql" } as const;

/** The suffix, id and label part of a variant. */
function variantParts(
  database: "postgres" | "mysql",
  form: ClaimFormName,
  variant: ThroughputVariant | RateLimitedVariant | undefined,
) {
  const prefix = idPrefix[database];
  if (variant === undefined)
    return { suffix: "", id: `${prefix}-${form}`, label: `rowclaim ${formLabel[form]}` };
  if ("prefetch" in variant)
    return {
      suffix: `_prefetch_${variant.prefetch}`,
      id: `${prefix}-${form}-prefetch-${variant.prefetch}`,
      label: `rowclaim ${formLabel[form]}, throughput (prefetch ${variant.prefetch})`,
    };
  return {
    suffix: "_rate_limited",
    id: `${prefix}-${form}-rate-limited`,
    label: `rowclaim ${formLabel[form]}, rateLimit (never reached)`,
  };
}

/**
 * A bench table on a server database: dropped, created as the driver's `schemaSql` writes it and
 * filled through rowclaim's broker before every drain (DDL on a small pool of its own); the broker
 * also serves the rowclaim contender that drains it.
 */
export class ServerTable {
  readonly #database: "postgres" | "mysql";
  readonly #url: string;
  readonly #poolSize: number;
  readonly table: TableDefinition;
  #admin: { execute(sql: string): Promise<void>; end(): Promise<void> } | undefined;
  #driver: Driver | undefined;
  #broker: Broker | undefined;

  constructor(database: "postgres" | "mysql", url: string, poolSize: number, table: TableDefinition) {
    this.#database = database;
    this.#url = url;
    this.#poolSize = poolSize;
    this.table = table;
  }

  /** The broker on the table's database (opened at the first call). */
  broker(): Broker {
    if (this.#broker === undefined) {
      this.#driver =
        this.#database === "postgres"
          ? createPostgresDriver({ url: this.#url, max: this.#poolSize })
          : createMysqlDriver({ url: this.#url, connectionLimit: this.#poolSize });
      this.#broker = createBroker({ driver: this.#driver });
    }
    return this.#broker;
  }

  #adminPool(): { execute(sql: string): Promise<void>; end(): Promise<void> } {
    if (this.#admin !== undefined) return this.#admin;
    if (this.#database === "postgres") {
      const pool = new pg.Pool({ connectionString: this.#url, max: 2 });
      this.#admin = { execute: async (sql) => void (await pool.query(sql)), end: () => pool.end() };
    } else {
      const pool = mysql.createPool({ uri: this.#url, connectionLimit: 2, multipleStatements: true });
      this.#admin = { execute: async (sql) => void (await pool.query(sql)), end: () => pool.end() };
    }
    return this.#admin;
  }

  #quoted(): string {
    return this.#database === "postgres" ? `"${this.table.name}"` : `\`${this.table.name}\``;
  }

  /** Drops and creates the table, then publishes `jobs` jobs (advisory tables: over 1,000 accounts). */
  async fill(jobs: number): Promise<void> {
    const broker = this.broker();
    const admin = this.#adminPool();
    await admin.execute(`DROP TABLE IF EXISTS ${this.#quoted()}`);
    await admin.execute((this.#driver as Driver).schemaSql(this.table));
    const advisory = this.table.form === "advisory";
    for (const part of chunks(payloads(jobs), 500)) {
      await broker.publishMany(
        this.table,
        part.map((payload) => ({
          payload,
          ...(advisory ? { values: { account: `acct-${payload.n % 1000}` } } : {}),
        })),
      );
    }
  }

  /** Closes the broker and drops the table (only if this run made it). */
  async close(): Promise<void> {
    if (this.#broker !== undefined) {
      await this.#broker.close();
      await this.#adminPool().execute(`DROP TABLE IF EXISTS ${this.#quoted()}`);
    }
    await this.#admin?.end();
  }
}

/**
 * rowclaim's `form` on the PostgreSQL or MariaDB/MySQL database at `url`; `extra` subscribe
 * options beside the workers. With `variant`, the contender is the throughput variant
 * (`rowclaim-<db>-<form>-prefetch-<N>`, subscribing with `{ workers, prefetch: N }` and its own
 * table) or the rate-limited one, run beside the defaults. With `keyLimit` (advisory form), the
 * table lets that many rows of one account run at once (`…-advisory-limit-<N>`, its own table):
 * over 1,000 accounts the limit never binds, so the line shows what the slots cost a claim.
 */
export function rowclaimServer(
  database: "postgres" | "mysql",
  url: string,
  form: ClaimFormName,
  poolSize: number,
  extra: SubscribeOptions = {},
  variant?: ThroughputVariant | RateLimitedVariant,
  keyLimit?: number,
): Contender {
  const parts = variantParts(database, form, variant);
  const limitSuffix = keyLimit === undefined ? "" : `_limit_${keyLimit}`;
  const table = benchTable(
    `rowclaim_wsbench_${form.toLowerCase()}${parts.suffix}${limitSuffix}`,
    form,
    keyLimit,
  );
  const options: SubscribeOptions =
    variant === undefined
      ? extra
      : "prefetch" in variant
        ? { ...extra, prefetch: variant.prefetch }
        : { ...extra, rateLimit: variant.rateLimit };
  const server = new ServerTable(database, url, poolSize, table);
  return {
    id: parts.id + (keyLimit === undefined ? "" : `-limit-${keyLimit}`),
    label: parts.label + (keyLimit === undefined ? "" : `, ${keyLimit} per key`),
    database,
    settings: describeSubscribe(options),
    fill: (jobs) => server.fill(jobs),
    async drain(workers, jobs, run) {
      const subscription = await server
        .broker()
        .subscribe(table, (job) => run.handler(job.payload), { ...options, workers });
      return drainSubscription(subscription, jobs, run);
    },
    close: () => server.close(),
  };
}

/**
 * rowclaim's lease form on SQLite: a new database file for every drain; `extra` subscribe options
 * beside the workers. `synchronous: "full"` is the driver's default (run beside the hand-written
 * loop at FULL); `"normal"` is plainjob's level, so that both queues pay the same for a commit.
 */
export function rowclaimSqlite(synchronous: SqliteSync, extra: SubscribeOptions = {}): Contender {
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-wsbench-"));
  const table = benchTable("rowclaim_wsbench_lease", "lease");
  let round = 0;
  let current: Broker | undefined;
  return {
    id: synchronous === "full" ? "rowclaim-sqlite-lease" : "rowclaim-sqlite-lease-normal",
    label: synchronous === "full" ? "rowclaim lease (defaults, FULL)" : "rowclaim lease (NORMAL)",
    database: "sqlite",
    settings:
      synchronous === "full"
        ? `createSqliteDriver({ filename }) (the default, synchronous FULL); ${describeSubscribe(extra)}`
        : `createSqliteDriver({ filename, synchronous: "normal" }) (plainjob's durability); ${describeSubscribe(extra)}`,
    async fill(jobs) {
      await current?.close();
      round += 1;
      const file = join(directory, `rowclaim-${round}.db`);
      await fillSqliteFile(file, table, synchronous, jobs);
      current = createBroker({
        driver: createSqliteDriver(
          synchronous === "full" ? { filename: file } : { filename: file, synchronous: "normal" },
        ),
      });
    },
    async drain(workers, jobs, run) {
      const broker = current as Broker;
      const subscription = await broker.subscribe(table, (job) => run.handler(job.payload), {
        ...extra,
        workers,
      });
      return drainSubscription(subscription, jobs, run);
    },
    async close() {
      await current?.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
