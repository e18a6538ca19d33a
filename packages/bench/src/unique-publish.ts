/**
 * Publish throughput with and without a unique key, side by side in one run: on PostgreSQL and
 * SQLite, the same number of single-row publishes (8 in flight) into a lease table without a key,
 * with a key per publish (every key unique: each publish inserts), and with keys colliding (ten
 * keys: almost every publish finds the queued row of its key and keeps it). Each line is the
 * median of `--rounds` runs on a fresh table.
 *
 * Run: `pnpm --filter @rowclaim/bench unique [-- flags]`. Flags: `--publishes N` (2000),
 * `--rounds N` (3), `--postgres URL` (`ROWCLAIM_POSTGRES_URL`, else the local service),
 * `--only postgres,sqlite`.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Broker, createBroker, defineTable, type TableDefinition } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";
import { createSqliteDriver } from "@rowclaim/sqlite";
import pg from "pg";

const { values } = parseArgs({
  // `pnpm … start -- --flag` passes the `--` on.
  args: process.argv.slice(2).filter((arg, index) => index > 0 || arg !== "--"),
  options: {
    publishes: { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
    postgres: {
      type: "string",
      default: process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    },
    only: { type: "string", default: "postgres,sqlite" },
  },
  allowPositionals: false,
});

const publishes = Number(values.publishes);
const rounds = Number(values.rounds);
const IN_FLIGHT = 8;
const COLLIDING_KEYS = 10;

type Variant = "no key" | "unique keys" | "colliding keys";
const variants: readonly Variant[] = ["no key", "unique keys", "colliding keys"];

function tableNamed(name: string): TableDefinition {
  return defineTable({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      lockedUntil: "locked_until",
      key: "job_key",
    },
  });
}

async function publishAll(broker: Broker, table: TableDefinition, variant: Variant): Promise<number> {
  let next = 0;
  const started = performance.now();
  const lane = async (): Promise<void> => {
    while (next < publishes) {
      const n = next++;
      if (variant === "no key") await broker.publish(table, { n });
      else
        await broker.publish(
          table,
          { n },
          { key: variant === "unique keys" ? `k${n}` : `k${n % COLLIDING_KEYS}` },
        );
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return publishes / ((performance.now() - started) / 1000);
}

function median(numbers: readonly number[]): number {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function onPostgres(): Promise<Record<Variant, number>> {
  const admin = new pg.Pool({ connectionString: values.postgres, max: 1 });
  const driver = createPostgresDriver({ url: values.postgres, max: IN_FLIGHT });
  const broker = createBroker({ driver });
  const result = {} as Record<Variant, number>;
  try {
    for (const variant of variants) {
      const runs: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const table = tableNamed(`rc_bench_unique_${process.pid}`);
        await admin.query(`DROP TABLE IF EXISTS "${table.name}"`);
        await admin.query(driver.schemaSql(table));
        runs.push(await publishAll(broker, table, variant));
        await admin.query(`DROP TABLE IF EXISTS "${table.name}"`);
      }
      result[variant] = median(runs);
    }
  } finally {
    await broker.close();
    await admin.end();
  }
  return result;
}

async function onSqlite(): Promise<Record<Variant, number>> {
  const dir = mkdtempSync(join(tmpdir(), "rowclaim-bench-unique-"));
  const result = {} as Record<Variant, number>;
  try {
    for (const variant of variants) {
      const runs: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const driver = createSqliteDriver({
          filename: join(dir, `${variant.replace(" ", "-")}-${round}.db`),
        });
        const table = tableNamed("jobs");
        driver.database.exec(driver.schemaSql(table));
        const broker = createBroker({ driver });
        runs.push(await publishAll(broker, table, variant));
        await broker.close();
      }
      result[variant] = median(runs);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

const only = values.only.split(",");
console.log(
  `publish throughput, ${publishes} single-row publishes, ${IN_FLIGHT} in flight, median of ${rounds}`,
);
console.log(`database      ${variants.map((variant) => variant.padStart(16)).join("")}`);
for (const [name, run] of [
  ["postgres", onPostgres],
  ["sqlite", onSqlite],
] as const) {
  if (!only.includes(name)) continue;
  const result = await run();
  console.log(
    `${name.padEnd(14)}${variants.map((variant) => `${Math.round(result[variant])}/s`.padStart(16)).join("")}`,
  );
}
