/**
 * Every contender of the workspace benchmark, by id: what the parent process lists and filters,
 * and what a contender's own process creates (`contender-process.ts`). Creating one opens nothing
 * until it is filled.
 *
 * @module
 */
import type { ClaimFormName, SubscribeOptions } from "@rowclaim/core";
import type { Contender, Database } from "./contender.js";
import type { HandlerKind } from "./work.js";

// Each contender's module is imported only by the process that runs it.
const bulk = () => import("./bulk-loop.js");
const rowclaim = () => import("./rowclaim.js");

/** The settings every contender process is started with (JSON on its command line). */
export interface RunSettings {
  readonly postgresUrl: string;
  readonly mysqlUrl: string;
  /** Connections in each server contender's pool. */
  readonly poolSize: number;
  /** The most workers a drain runs (the loops' connections). */
  readonly maxWorkers: number;
  readonly handler: HandlerKind;
  /** rowclaim's subscribe options beside the workers. */
  readonly subscribe: SubscribeOptions;
  /** The throughput variants' `prefetch` sizes. */
  readonly prefetch: readonly number[];
  /** pg-boss's batch sizes, one contender each. */
  readonly pgBossBatches: readonly number[];
}

/** One contender, before it is created. */
export interface ContenderEntry {
  readonly id: string;
  readonly database: Database;
  create(): Promise<Contender>;
}

const forms: readonly ClaimFormName[] = ["lease", "rowLock", "advisory"];

/** Every contender, in the order the tables print them. */
export function contenderEntries(settings: RunSettings): ContenderEntry[] {
  const { postgresUrl: pgUrl, mysqlUrl, poolSize, subscribe: extra, maxWorkers } = settings;
  const entry = (id: string, database: Database, create: () => Promise<Contender>): ContenderEntry => ({
    id,
    database,
    create,
  });
  const server = (database: "postgres" | "mysql", url: string): ContenderEntry[] => {
    const p = database === "postgres" ? "pg" : "mysql";
    return [
      ...forms.map((form) =>
        entry(`rowclaim-${p}-${form}`, database, async () =>
          (await rowclaim()).rowclaimServer(database, url, form, poolSize, extra),
        ),
      ),
      ...(database === "postgres"
        ? [
            // The rate take's claim cost: the lease defaults with a rate limit the drain never reaches.
            entry("rowclaim-pg-lease-rate-limited", database, async () =>
              (await rowclaim()).rowclaimServer(database, url, "lease", poolSize, extra, {
                rateLimit: { limit: 1_000_000_000, intervalMs: 1000 },
              }),
            ),
            // The advisory form with a per-key limit beside it: the claim cost the slots add.
            entry("rowclaim-pg-advisory-limit-3", database, async () =>
              (await rowclaim()).rowclaimServer(database, url, "advisory", poolSize, extra, undefined, 3),
            ),
          ]
        : []),
      ...settings.prefetch.flatMap((prefetch) =>
        (["lease", "rowLock"] as const).map((form) =>
          entry(`rowclaim-${p}-${form}-prefetch-${prefetch}`, database, async () =>
            (await rowclaim()).rowclaimServer(database, url, form, poolSize, extra, { prefetch }),
          ),
        ),
      ),
      ...forms.map((form) =>
        entry(`loop-${p}-${form}`, database, async () =>
          (await import("./server-loop.js")).serverLoop(database, url, form, maxWorkers),
        ),
      ),
      database === "postgres"
        ? entry("bulk-loop-pg", database, async () => (await bulk()).bulkLoopPostgres(url, poolSize))
        : entry("bulk-loop-mysql", database, async () => (await bulk()).bulkLoopMysql(url, poolSize)),
    ];
  };
  return [
    ...server("postgres", pgUrl),
    entry("graphile-worker", "postgres", async () =>
      (await import("./graphile-worker.js")).graphileWorker(pgUrl, poolSize),
    ),
    ...settings.pgBossBatches.map((size) =>
      entry(`pg-boss-${size}`, "postgres", async () =>
        (await import("./pg-boss.js")).pgBoss(pgUrl, poolSize, size),
      ),
    ),
    ...server("mysql", mysqlUrl),
    entry("rowclaim-sqlite-lease", "sqlite", async () => (await rowclaim()).rowclaimSqlite("full", extra)),
    entry("sqlite-loop-full", "sqlite", async () =>
      (await import("./sqlite-loop.js")).sqliteLoop("full", maxWorkers),
    ),
    entry("bulk-loop-sqlite-full", "sqlite", async () => (await bulk()).bulkLoopSqlite("full")),
    entry("rowclaim-sqlite-lease-normal", "sqlite", async () =>
      (await rowclaim()).rowclaimSqlite("normal", extra),
    ),
    entry("sqlite-loop-normal", "sqlite", async () =>
      (await import("./sqlite-loop.js")).sqliteLoop("normal", maxWorkers),
    ),
    entry("bulk-loop-sqlite-normal", "sqlite", async () => (await bulk()).bulkLoopSqlite("normal")),
    entry("plainjob", "sqlite", async () => (await import("./plainjob.js")).plainjob()),
  ];
}

/**
 * What each rowclaim contender's figures are divided by (those in the run): on PostgreSQL
 * graphile-worker, pg-boss, the form's loop and the bulk ceiling; on MariaDB the form's loop and
 * the ceiling; on SQLite the loops and the ceiling at the same `synchronous` level, and plainjob
 * beside the NORMAL line (plainjob's level).
 */
export function referencesOf(id: string, pgBossBatches: readonly number[]): string[] {
  const form = forms.find((name) => id.split("-").includes(name)) ?? "lease";
  if (id.startsWith("rowclaim-pg-"))
    return [
      "graphile-worker",
      ...pgBossBatches.map((size) => `pg-boss-${size}`),
      `loop-pg-${form}`,
      "bulk-loop-pg",
    ];
  if (id.startsWith("rowclaim-mysql-")) return [`loop-mysql-${form}`, "bulk-loop-mysql"];
  if (id === "rowclaim-sqlite-lease") return ["sqlite-loop-full", "bulk-loop-sqlite-full"];
  if (id === "rowclaim-sqlite-lease-normal")
    return ["plainjob", "sqlite-loop-normal", "bulk-loop-sqlite-normal"];
  return [];
}
