/**
 * rowclaim's contenders: each form on PostgreSQL and the lease form on SQLite, with the library's
 * defaults (a subscription given only its workers).
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
  defineTable,
  type SubscribeOptions,
  type TableDefinition,
} from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";
import { createSqliteDriver } from "@rowclaim/sqlite";
import pg from "pg";
import { type Contender, chunks, payloads, waitUntil } from "./contender.js";
import type { SqliteSync } from "./sqlite-loop.js";
import { type HandlerKind, handlerOf } from "./work.js";

/** The bench table of a form: id, payload, attempt, run_at, priority, and the form's own columns. */
export function benchTable(name: string, form: ClaimFormName): TableDefinition {
  return defineTable({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      priority: "priority",
      ...(form === "lease" ? { lockedUntil: "locked_until" } : {}),
    },
    ...(form === "advisory" ? { extraColumns: ["account"], advisoryLock: `${name}:{account}` } : {}),
  });
}

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

/** The suffix, id and label part of a variant. */
function variantParts(form: ClaimFormName, variant: ThroughputVariant | RateLimitedVariant | undefined) {
  if (variant === undefined)
    return { suffix: "", id: `rowclaim-pg-${form}`, label: `rowclaim ${formLabel[form]}` };
  if ("prefetch" in variant)
    return {
      suffix: `_prefetch_${variant.prefetch}`,
      id: `rowclaim-pg-${form}-prefetch-${variant.prefetch}`,
      label: `rowclaim ${formLabel[form]}, throughput (prefetch ${variant.prefetch})`,
    };
  return {
    suffix: "_rate_limited",
    id: `rowclaim-pg-${form}-rate-limited`,
    label: `rowclaim ${formLabel[form]}, rateLimit (never reached)`,
  };
}

/**
 * rowclaim's `form` on the PostgreSQL database at `url`; `extra` subscribe options beside the
 * workers. With `variant`, the contender is the throughput variant (`rowclaim-pg-<form>-prefetch-<N>`,
 * subscribing with `{ workers, prefetch: N }` and its own table), run beside the defaults.
 */
export function rowclaimPostgres(
  url: string,
  form: ClaimFormName,
  poolSize: number,
  handler: HandlerKind,
  extra: SubscribeOptions = {},
  variant?: ThroughputVariant | RateLimitedVariant,
): Contender {
  const run = handlerOf(handler);
  const parts = variantParts(form, variant);
  const table = benchTable(`rowclaim_wsbench_${form.toLowerCase()}${parts.suffix}`, form);
  const options: SubscribeOptions =
    variant === undefined
      ? extra
      : "prefetch" in variant
        ? { ...extra, prefetch: variant.prefetch }
        : { ...extra, rateLimit: variant.rateLimit };
  let driver: Driver | undefined;
  let broker: Broker | undefined;
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  const open = (): Broker => {
    if (broker === undefined) {
      driver = createPostgresDriver({ url, max: poolSize });
      broker = createBroker({ driver });
    }
    return broker;
  };
  return {
    id: parts.id,
    label: parts.label,
    database: "postgres",
    settings: `${describeSubscribe(options)}, ${handler} handler`,
    async fill(jobs) {
      const b = open();
      await admin.query(`DROP TABLE IF EXISTS "${table.name}"`);
      await admin.query((driver as Driver).schemaSql(table));
      for (const part of chunks(payloads(jobs), 500)) {
        await b.publishMany(
          table,
          part.map((payload) => ({
            payload,
            ...(form === "advisory" ? { values: { account: `acct-${payload.n % 1000}` } } : {}),
          })),
        );
      }
    },
    async drain(workers, jobs) {
      const b = open();
      const start = performance.now();
      const subscription = await b.subscribe(table, (job) => run(job.payload), { ...options, workers });
      await waitUntil(() => subscription.stats.acked >= jobs, "rowclaim to drain", 600_000);
      const ms = performance.now() - start;
      const done = subscription.stats.acked;
      await subscription.stop();
      return { ms, done };
    },
    async close() {
      // Only a contender that made its table drops it: a skipped one (`--only`, `--latency-only`)
      // leaves alone a table another run may be draining.
      if (broker !== undefined) {
        await broker.close();
        await admin.query(`DROP TABLE IF EXISTS "${table.name}"`);
      }
      await admin.end();
    },
  };
}

/**
 * rowclaim's lease form on SQLite: a new database file for every drain; `extra` subscribe options
 * beside the workers. `synchronous: "full"` is the driver's default (run beside the hand-written
 * loop at FULL); `"normal"` is plainjob's level, so that both queues pay the same for a commit.
 */
export function rowclaimSqlite(
  synchronous: SqliteSync,
  handler: HandlerKind,
  extra: SubscribeOptions = {},
): Contender {
  const run = handlerOf(handler);
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-wsbench-"));
  const table = benchTable("rowclaim_wsbench_lease", "lease");
  let round = 0;
  let current: { broker: Broker; file: string } | undefined;
  return {
    id: synchronous === "full" ? "rowclaim-sqlite-lease" : "rowclaim-sqlite-lease-normal",
    label: synchronous === "full" ? "rowclaim lease (defaults, FULL)" : "rowclaim lease (NORMAL)",
    database: "sqlite",
    settings:
      synchronous === "full"
        ? `createSqliteDriver({ filename }) (the default, synchronous FULL); ${describeSubscribe(extra)}, ${handler} handler`
        : `createSqliteDriver({ filename, synchronous: "normal" }) (plainjob's durability); ${describeSubscribe(extra)}, ${handler} handler`,
    async fill(jobs) {
      await current?.broker.close();
      round += 1;
      const file = join(directory, `rowclaim-${round}.db`);
      const driver = createSqliteDriver(
        synchronous === "full" ? { filename: file } : { filename: file, synchronous: "normal" },
      );
      driver.database.exec(driver.schemaSql(table));
      const broker = createBroker({ driver });
      for (const part of chunks(payloads(jobs), 500)) {
        await broker.publishMany(
          table,
          part.map((payload) => ({ payload })),
        );
      }
      current = { broker, file };
    },
    async drain(workers, jobs) {
      const broker = (current as { broker: Broker }).broker;
      const start = performance.now();
      const subscription = await broker.subscribe(table, (job) => run(job.payload), { ...extra, workers });
      await waitUntil(() => subscription.stats.acked >= jobs, "rowclaim to drain", 600_000);
      const ms = performance.now() - start;
      const done = subscription.stats.acked;
      await subscription.stop();
      return { ms, done };
    },
    async close() {
      await current?.broker.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
