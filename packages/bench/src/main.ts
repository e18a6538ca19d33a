/**
 * The workspace benchmark: rowclaim's forms beside graphile-worker and pg-boss on one
 * PostgreSQL, rowclaim's SQLite lease form beside plainjob, N pre-inserted no-op jobs, each
 * worker count, interleaved rounds (each round runs every queue once per worker count, in an
 * order that turns from round to round), medians; then publish → handler latency. Prints the
 * figures and the ratios, writes `results/results.json` and draws `results/results.svg`.
 *
 * Run: `pnpm --filter @rowclaim/bench build && pnpm --filter @rowclaim/bench start [-- flags]`.
 * Flags: `--jobs N` (10000), `--workers 1,8`, `--rounds N` (3), `--latency-samples N` (200, 0
 * skips latency), `--url URL` (`ROWCLAIM_POSTGRES_URL` or the local service), `--only id,id`,
 * `--pg-boss-batch LIST` (`500`: pg-boss's batch sizes, one contender each),
 * `--out DIR` (`results`, beside `package.json`), `--subscribe JSON` (rowclaim's subscribe options
 * beside the workers, for example `'{"batch":4}'`; default none: the library's defaults),
 * `--prefetch LIST` (`500`: the throughput variants of the lease and row lock forms, one
 * contender per size; `0`: none), `--latency-only` (no throughput run; `--only` then picks the
 * latency subjects: `rowclaim-pg-lease`, `rowclaim-pg-rowLock`, `rowclaim-pg-advisory`,
 * `graphile-worker`, `rowclaim-sqlite-lease`, `pg-boss`, `plainjob`).
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus, release as osRelease, type as osType, totalmem } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { SubscribeOptions } from "@rowclaim/core";
import Database from "better-sqlite3";
import pg from "pg";
import { bulkLoopPostgres } from "./bulk-loop.js";
import { type ChartPanel, renderChart } from "./chart.js";
import type { Contender } from "./contender.js";
import { graphileWorker } from "./graphile-worker.js";
import { type LatencyResult, measureLatencies } from "./latency.js";
import { pgBoss } from "./pg-boss.js";
import { plainjob } from "./plainjob.js";
import { rowclaimPostgres, rowclaimSqlite } from "./rowclaim.js";
import { sqliteLoop } from "./sqlite-loop.js";
import { median, round } from "./statistics.js";
import { parseHandlerKind } from "./work.js";

/** One queue's throughput at one worker count. */
export interface ThroughputResult {
  readonly id: string;
  readonly label: string;
  readonly database: "postgres" | "sqlite";
  readonly settings: string;
  readonly workers: number;
  /** Jobs per second, round by round. */
  readonly perSecond: readonly number[];
  readonly median: number;
  /** Node CPU (user + system) of this process per job, µs, round by round. */
  readonly cpuMicrosPerJob: readonly number[];
  /** The median of {@link ThroughputResult.cpuMicrosPerJob}. */
  readonly medianCpuMicrosPerJob: number;
}

/** A ratio of two medians at one worker count. */
export interface RatioResult {
  readonly database: "postgres" | "sqlite";
  readonly workers: number;
  readonly subject: string;
  readonly versus: string;
  readonly ratio: number;
}

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "10000" },
    workers: { type: "string", default: "1,8" },
    rounds: { type: "string", default: "3" },
    "latency-samples": { type: "string", default: "200" },
    url: {
      type: "string",
      default: process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    },
    only: { type: "string" },
    subscribe: { type: "string", default: "{}" },
    "pg-boss-batch": { type: "string", default: "500" },
    prefetch: { type: "string", default: "500" },
    "latency-only": { type: "boolean", default: false },
    handler: { type: "string", default: "async" },
    out: { type: "string", default: "results" },
  },
  allowPositionals: false,
});

const jobs = Number(values.jobs);
const workerCounts = values.workers.split(",").map(Number);
const rounds = Number(values.rounds);
const latencySamples = Number(values["latency-samples"]);
const url = values.url;
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = isAbsolute(values.out) ? values.out : resolve(packageDir, values.out);
const poolSize = Math.max(...workerCounts) + 4;

// Subscribe options for rowclaim beside the workers (none by default: the library's defaults).
const extra = JSON.parse(values.subscribe) as SubscribeOptions;
// The throughput variants: rowclaim's lease and row lock forms with `prefetch`, beside the defaults.
const prefetchSizes = values.prefetch
  .split(",")
  .filter((size) => size.trim() !== "")
  .map(Number)
  .filter((size) => size > 0);
const latencyOnly = values["latency-only"];
const handler = parseHandlerKind(values.handler);

const all: Contender[] = [
  rowclaimPostgres(url, "lease", poolSize, handler, extra),
  // The rate take's claim cost: the lease defaults with a rate limit the drain never reaches.
  rowclaimPostgres(url, "lease", poolSize, handler, extra, {
    rateLimit: { limit: 1_000_000_000, intervalMs: 1000 },
  }),
  rowclaimPostgres(url, "rowLock", poolSize, handler, extra),
  rowclaimPostgres(url, "advisory", poolSize, handler, extra),
  ...prefetchSizes.flatMap((prefetch) => [
    rowclaimPostgres(url, "lease", poolSize, handler, extra, { prefetch }),
    rowclaimPostgres(url, "rowLock", poolSize, handler, extra, { prefetch }),
  ]),
  graphileWorker(url, poolSize, handler),
  ...values["pg-boss-batch"].split(",").map((size) => pgBoss(url, poolSize, Number(size), handler)),
  bulkLoopPostgres(url, poolSize, handler),
  rowclaimSqlite("full", handler, extra),
  sqliteLoop("full", handler),
  rowclaimSqlite("normal", handler, extra),
  plainjob(handler),
];
const only = values.only?.split(",");
const contenders = latencyOnly
  ? []
  : only === undefined
    ? all
    : all.filter((contender) => only.includes(contender.id));
for (const skipped of all.filter((contender) => !contenders.includes(contender))) await skipped.close();

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

async function machine(): Promise<Record<string, unknown>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const version = (await client.query("SHOW server_version")).rows[0] as { server_version: string };
  await client.end();
  const db = new Database(":memory:");
  const sqlite = (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
  db.close();
  let cpu = cpus()[0]?.model ?? "unknown";
  try {
    cpu =
      execFileSync("sh", ["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).toString().trim() ||
      cpu;
  } catch {}
  return {
    cpu,
    cores: cpus().length,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    os: `${osType()} ${osRelease()}`,
    node: process.version,
    postgres: version.server_version,
    sqlite,
    note: "PostgreSQL runs on the same machine as the benchmark; 127.0.0.1 TCP",
  };
}

const figures = new Map<string, number[]>();
const cpuFigures = new Map<string, number[]>();
const key = (id: string, workers: number): string => `${id}@${workers}`;

log(
  `rowclaim workspace benchmark: ${jobs} no-op jobs per drain, workers ${workerCounts.join(" and ")}, ${rounds} interleaved rounds, medians.`,
);
try {
  for (let r = 0; r < rounds; r += 1) {
    for (const workers of workerCounts) {
      // The order turns each round, so no queue always runs first or last.
      const shift = r % contenders.length;
      const order = [...contenders.slice(shift), ...contenders.slice(0, shift)];
      for (const contender of order) {
        await contender.fill(jobs);
        const cpuBefore = process.cpuUsage();
        const { ms, done } = await contender.drain(workers, jobs);
        const cpu = process.cpuUsage(cpuBefore);
        const rate = (done * 1000) / ms;
        const cpuPerJob = done > 0 ? (cpu.user + cpu.system) / done : 0;
        const list = figures.get(key(contender.id, workers)) ?? [];
        list.push(rate);
        figures.set(key(contender.id, workers), list);
        const cpuList = cpuFigures.get(key(contender.id, workers)) ?? [];
        cpuList.push(cpuPerJob);
        cpuFigures.set(key(contender.id, workers), cpuList);
        log(
          `round ${r + 1}/${rounds}  ${workers} worker(s)  ${contender.label.padEnd(44)} ${Math.round(rate)} jobs/s  ${Math.round(cpuPerJob)} µs Node CPU/job`,
        );
      }
    }
  }
} finally {
  for (const contender of contenders) await contender.close();
}

const throughput: ThroughputResult[] = [];
for (const contender of contenders) {
  for (const workers of workerCounts) {
    const list = figures.get(key(contender.id, workers)) ?? [];
    const cpuList = cpuFigures.get(key(contender.id, workers)) ?? [];
    throughput.push({
      id: contender.id,
      label: contender.label,
      database: contender.database,
      settings: contender.settings,
      workers,
      perSecond: list.map((value) => Math.round(value)),
      median: Math.round(median(list)),
      cpuMicrosPerJob: cpuList.map((value) => Math.round(value)),
      medianCpuMicrosPerJob: Math.round(median(cpuList)),
    });
  }
}
const find = (id: string, workers: number): ThroughputResult | undefined =>
  throughput.find((entry) => entry.id === id && entry.workers === workers);

const ratios: RatioResult[] = [];
for (const workers of workerCounts) {
  for (const subject of throughput.filter(
    (entry) => entry.workers === workers && entry.id.startsWith("rowclaim"),
  )) {
    const references =
      subject.database === "postgres"
        ? [
            "graphile-worker",
            ...values["pg-boss-batch"].split(",").map((size) => `pg-boss-${size}`),
            "bulk-loop-pg",
          ]
        : subject.id === "rowclaim-sqlite-lease"
          ? ["sqlite-loop-full"]
          : ["plainjob"];
    for (const versus of references) {
      const other = find(versus, workers);
      if (other === undefined || other.median <= 0) continue;
      ratios.push({
        database: subject.database,
        workers,
        subject: subject.id,
        versus,
        ratio: round(subject.median / other.median, 2),
      });
    }
  }
}

let latency: LatencyResult[] = [];
if (latencySamples > 0) {
  log(`publish → handler latency: ${latencySamples} jobs one at a time into an idle queue.`);
  latency = await measureLatencies(
    url,
    latencySamples,
    latencyOnly && only !== undefined ? (id) => only.includes(id) : () => true,
  );
}

// The printed summary.
const lines: string[] = ["", "throughput (jobs/s, median of the rounds)", ""];
const header = [
  "queue",
  "database",
  ...workerCounts.flatMap((w) => [`${w} worker${w === 1 ? "" : "s"}`, "µs CPU/job"]),
];
const rows = contenders.map((contender) => [
  contender.label,
  contender.database,
  ...workerCounts.flatMap((w) => [
    String(find(contender.id, w)?.median ?? "-"),
    String(find(contender.id, w)?.medianCpuMicrosPerJob ?? "-"),
  ]),
]);
const widths = header.map((_, column) =>
  Math.max(...[header, ...rows].map((row) => (row[column] ?? "").length)),
);
for (const row of [header, ...rows])
  lines.push(row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  "));
lines.push("", "ratios (rowclaim ÷ other, medians of jobs/s)", "");
for (const ratio of ratios) {
  lines.push(
    `${ratio.subject.padEnd(34)} ÷ ${ratio.versus.padEnd(16)} at ${ratio.workers} worker(s): ${ratio.ratio.toFixed(2)}`,
  );
}
if (latency.length > 0) {
  lines.push("", "publish → handler latency (ms)", "");
  for (const entry of latency) {
    lines.push(
      `${entry.label.padEnd(20)} ${entry.scope.padEnd(14)} p50 ${entry.p50Ms.toFixed(2).padStart(8)}  p99 ${entry.p99Ms.toFixed(2).padStart(8)}  (${entry.samples} jobs)`,
    );
  }
}
process.stdout.write(`${lines.join("\n")}\n`);

// The JSON result and the chart.
mkdirSync(outDir, { recursive: true });
const result = {
  generatedAt: new Date().toISOString(),
  machine: await machine(),
  settings: {
    jobs,
    workers: workerCounts,
    rounds,
    latencySamples,
    handler:
      handler === "async"
        ? "async: async (job) => { await work(job.payload) }, work an async no-op"
        : "sync: returns at once",
    rowclaimSubscribe: extra,
    rowclaimThroughputPrefetch: prefetchSizes,
    measured:
      "from the moment consuming starts to the moment every job is settled (the database holds no unfinished job of the run); Node CPU per job: this process's user + system CPU over the drain ÷ jobs",
  },
  throughput,
  ratios,
  latency,
};
const jsonFile = join(outDir, "results.json");
writeFileSync(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
// The committed result is formatted as the workspace's lint wants it (biome), where biome is installed.
const biome = resolve(packageDir, "../../node_modules/.bin/biome");
if (existsSync(biome)) {
  try {
    execFileSync(biome, ["format", "--write", jsonFile], { stdio: "ignore" });
  } catch {}
}

const ratioNote = (entry: ThroughputResult): string | undefined => {
  const versus = entry.database === "postgres" ? "graphile-worker" : "plainjob";
  const ratio = ratios.find(
    (r) => r.subject === entry.id && r.versus === versus && r.workers === entry.workers,
  );
  return ratio === undefined ? undefined : `(${ratio.ratio.toFixed(2)}× ${versus})`;
};
const panels: ChartPanel[] = (["postgres", "sqlite"] as const)
  .map((database) => ({
    title:
      database === "postgres"
        ? `PostgreSQL ${String(result.machine.postgres).split(" ")[0]}`
        : `SQLite ${String(result.machine.sqlite)}`,
    groups: workerCounts.map((workers) => ({
      title: `${workers} worker${workers === 1 ? "" : "s"}`,
      bars: throughput
        .filter((entry) => entry.database === database && entry.workers === workers)
        .map((entry) => {
          const note = entry.id.startsWith("rowclaim") ? ratioNote(entry) : undefined;
          const rate = `${entry.median.toLocaleString("en-US")} jobs/s`;
          return {
            id: entry.id,
            label: entry.label,
            value: entry.median,
            text: note === undefined ? rate : `${rate}  ${note}`,
          };
        }),
    })),
  }))
  .filter((panel) => panel.groups.some((group) => group.bars.length > 0));
writeFileSync(
  join(outDir, "results.svg"),
  renderChart(
    "rowclaim beside other queues: jobs drained per second (higher is better)",
    `${jobs.toLocaleString("en-US")} pre-inserted no-op jobs, median of ${rounds} interleaved rounds; ${String(result.machine.cores)} cores, Node ${process.version}; rowclaim ${values.subscribe === "{}" ? "with its defaults" : `with ${values.subscribe}`}`,
    panels,
  ),
);
log(`wrote ${join(outDir, "results.json")} and ${join(outDir, "results.svg")}`);
