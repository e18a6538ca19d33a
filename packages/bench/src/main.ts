/**
 * The workspace benchmark: publish → handler latency first, on idle databases; then rowclaim's
 * forms beside graphile-worker and pg-boss on PostgreSQL, beside hand-written loops and each
 * database's own ceiling (a bulk loop) on PostgreSQL, MariaDB/MySQL and SQLite, and rowclaim's
 * SQLite lease form beside plainjob; N pre-inserted jobs per drain, each worker count, interleaved
 * rounds (each round runs every contender once per worker count, in an order that turns from round
 * to round), medians. Every contender runs in a process of its own (`contender-process.ts`), so the
 * Node CPU per job printed beside its figure is its own, and is timed the same way: from its first
 * claim to the moment its last settlement is committed. Prints the figures and the ratios, writes
 * `results/results.json` and draws `results/results.svg`.
 *
 * Run: `pnpm --filter @rowclaim/bench build && pnpm --filter @rowclaim/bench start [-- flags]`;
 * the flags are in the README.
 *
 * @module
 */
import { execFileSync, fork } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus, release as osRelease, type as osType, totalmem } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import pg from "pg";
import { formatCommandHelp, UsageError } from "rowclaim/bench";
import { type ChartPanel, renderChart } from "./chart.js";
import { type Database as DatabaseName, databaseNames } from "./contender.js";
import type { Reply, Request } from "./contender-process.js";
import { contenderEntries, type RunSettings, referencesOf } from "./contenders.js";
import { type BenchFlags, benchCommand, parseBenchFlags } from "./flags.js";
import { type LatencyResult, measureLatencies } from "./latency.js";
import { median, round } from "./statistics.js";

/** One contender's throughput at one worker count. */
export interface ThroughputResult {
  readonly id: string;
  readonly label: string;
  readonly database: DatabaseName;
  readonly settings: string;
  readonly workers: number;
  /** Jobs per second, round by round. */
  readonly perSecond: readonly number[];
  readonly median: number;
  /** Node CPU (user + system) of the contender's process per job, µs, round by round. */
  readonly cpuMicrosPerJob: readonly number[];
  /** The median of {@link ThroughputResult.cpuMicrosPerJob}. */
  readonly medianCpuMicrosPerJob: number;
}

/** A ratio of two medians at one worker count: jobs/s, and Node CPU per job. */
export interface RatioResult {
  readonly database: DatabaseName;
  readonly workers: number;
  readonly subject: string;
  readonly versus: string;
  /** The subject's median jobs/s ÷ the other's. */
  readonly ratio: number;
  /** The subject's median Node CPU per job ÷ the other's. */
  readonly cpuRatio: number;
}

let flags: BenchFlags;
try {
  flags = parseBenchFlags(process.argv.slice(2), process.env);
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message} --help lists the flags.\n`);
  process.exit(2);
}
if (flags.help) {
  process.stdout.write(formatCommandHelp(benchCommand));
  process.exit(0);
}
const { jobs, serverWorkers, sqliteWorkers, rounds, latencySamples } = flags;
const workersOf = (database: DatabaseName): readonly number[] =>
  database === "sqlite" ? sqliteWorkers : serverWorkers;
const workerCounts = [...new Set([...serverWorkers, ...sqliteWorkers])].sort((a, b) => a - b);
const url = flags.url;
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const outDir = isAbsolute(flags.out) ? flags.out : resolve(packageDir, flags.out);
const maxWorkers = Math.max(...workerCounts);
const { latencyOnly, pgBossBatches, databases, only } = flags;
const settings: RunSettings = {
  postgresUrl: url,
  mysqlUrl: flags.mysql,
  poolSize: maxWorkers + 4,
  maxWorkers,
  handler: flags.handler,
  // Subscribe options for rowclaim beside the workers (none by default: the library's defaults).
  subscribe: flags.subscribe,
  // The throughput variants: rowclaim's lease and row lock forms with `prefetch`, beside the defaults.
  prefetch: flags.prefetch,
  pgBossBatches,
};
const entries = latencyOnly
  ? []
  : contenderEntries(settings).filter(
      (entry) => databases.includes(entry.database) && (only === undefined || only.includes(entry.id)),
    );

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** A contender in a process of its own, asked one thing at a time. */
class ContenderProcess {
  readonly id: string;
  readonly database: DatabaseName;
  label = "";
  settings = "";
  readonly #child: ReturnType<typeof fork>;
  #waiting: ((reply: Reply) => void) | undefined;
  /** Replies that came before anyone waited for them (the `ready`). */
  readonly #early: Reply[] = [];
  readonly #exited: Promise<void>;

  constructor(id: string, database: DatabaseName) {
    this.id = id;
    this.database = database;
    this.#child = fork(
      fileURLToPath(new URL("./contender-process.js", import.meta.url)),
      [id, JSON.stringify(settings)],
      { execArgv: ["--expose-gc"], stdio: ["ignore", "inherit", "inherit", "ipc"] },
    );
    this.#child.on("message", (reply: Reply) => {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (waiting === undefined) this.#early.push(reply);
      else waiting(reply);
    });
    this.#exited = new Promise((done) => this.#child.once("exit", () => done()));
  }

  /** Waits for the process's `ready`. */
  async ready(): Promise<void> {
    const reply = await this.#next();
    if (reply.op !== "ready")
      throw new Error(`${this.id}: ${reply.op === "error" ? reply.message : reply.op}`);
    this.label = reply.label;
    this.settings = reply.settings;
  }

  #next(): Promise<Reply> {
    const early = this.#early.shift();
    if (early !== undefined) return Promise.resolve(early);
    return new Promise((done, fail) => {
      const onExit = (): void => fail(new Error(`${this.id}: the contender's process ended`));
      this.#child.once("exit", onExit);
      this.#waiting = (reply) => {
        this.#child.off("exit", onExit);
        done(reply);
      };
    });
  }

  /** Sends `request` and resolves the reply (rejects on an error reply). */
  async ask(request: Request): Promise<Reply> {
    const reply = this.#next();
    this.#child.send(request);
    const answer = await reply;
    if (answer.op === "error") throw new Error(`${this.id}: ${answer.message}`);
    return answer;
  }

  /** Closes the contender and waits for its process to end. */
  async close(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.connected) {
      await this.ask({ op: "close" }).catch((error: Error) => log(error.message));
    }
    await this.#exited;
  }
}

async function machine(): Promise<Record<string, unknown>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const version = (await client.query("SHOW server_version")).rows[0] as { server_version: string };
  await client.end();
  let mariadb = "not run";
  if (databases.includes("mysql")) {
    const connection = await mysql.createConnection({ uri: flags.mysql });
    const [rows] = await connection.query<mysql.RowDataPacket[]>("SELECT VERSION() AS v");
    mariadb = String(rows[0]?.v);
    await connection.end();
  }
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
    mysql: mariadb,
    sqlite,
    note: "PostgreSQL and MariaDB run on the same machine as the benchmark; 127.0.0.1 TCP",
  };
}

const figures = new Map<string, number[]>();
const cpuFigures = new Map<string, number[]>();
const key = (id: string, workers: number): string => `${id}@${workers}`;

log(
  `rowclaim workspace benchmark: ${jobs} jobs per drain, workers ${serverWorkers.join(" and ")} (SQLite ${sqliteWorkers.join(" and ")}), ${rounds} interleaved rounds, medians; ${settings.handler} handler; each contender in a process of its own.`,
);
// Latency first, while the databases are idle (no drain's dead rows or checkpoint behind it).
let latency: LatencyResult[] = [];
if (latencySamples > 0) {
  log(
    `publish → handler latency: ${latencySamples} jobs one at a time into an idle queue, in ${rounds} interleaved rounds.`,
  );
  latency = await measureLatencies(
    url,
    latencySamples,
    rounds,
    latencyOnly && only !== undefined ? (id) => only.includes(id) : () => true,
  );
}

const contenders = entries.map((entry) => new ContenderProcess(entry.id, entry.database));
try {
  for (const contender of contenders) await contender.ready();
  for (let r = 0; r < rounds; r += 1) {
    for (const workers of workerCounts) {
      const here = contenders.filter((contender) => workersOf(contender.database).includes(workers));
      // The order turns each round, so no queue always runs first or last.
      const shift = here.length === 0 ? 0 : r % here.length;
      const order = [...here.slice(shift), ...here.slice(0, shift)];
      for (const contender of order) {
        await contender.ask({ op: "fill", jobs });
        const reply = await contender.ask({ op: "drain", workers, jobs });
        if (reply.op !== "drained") throw new Error(`${contender.id}: ${reply.op}`);
        const rate = reply.ms > 0 ? (reply.done * 1000) / reply.ms : 0;
        const cpuPerJob = reply.done > 0 ? reply.cpuMicros / reply.done : 0;
        if (reply.done < jobs) log(`${contender.id}: only ${reply.done} of ${jobs} jobs settled`);
        const list = figures.get(key(contender.id, workers)) ?? [];
        list.push(rate);
        figures.set(key(contender.id, workers), list);
        const cpuList = cpuFigures.get(key(contender.id, workers)) ?? [];
        cpuList.push(cpuPerJob);
        cpuFigures.set(key(contender.id, workers), cpuList);
        log(
          `round ${r + 1}/${rounds}  ${workers} worker(s)  ${contender.database.padEnd(8)} ${contender.label.padEnd(46)} ${String(Math.round(rate)).padStart(6)} jobs/s  ${String(Math.round(cpuPerJob)).padStart(5)} µs Node CPU/job`,
        );
      }
    }
  }
} finally {
  await Promise.all(contenders.map((contender) => contender.close()));
}

const throughput: ThroughputResult[] = [];
for (const contender of contenders) {
  for (const workers of workersOf(contender.database)) {
    const list = figures.get(key(contender.id, workers)) ?? [];
    const cpuList = cpuFigures.get(key(contender.id, workers)) ?? [];
    if (list.length === 0) continue;
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
for (const subject of throughput.filter((entry) => entry.id.startsWith("rowclaim"))) {
  for (const versus of referencesOf(subject.id, pgBossBatches)) {
    const other = find(versus, subject.workers);
    if (other === undefined || other.median <= 0) continue;
    ratios.push({
      database: subject.database,
      workers: subject.workers,
      subject: subject.id,
      versus,
      ratio: round(subject.median / other.median, 2),
      cpuRatio:
        other.medianCpuMicrosPerJob > 0
          ? round(subject.medianCpuMicrosPerJob / other.medianCpuMicrosPerJob, 2)
          : 0,
    });
  }
}

// The printed summary: one table per database.
const names: Record<DatabaseName, string> = {
  postgres: "PostgreSQL",
  mysql: "MariaDB/MySQL",
  sqlite: "SQLite",
};
const lines: string[] = [
  "",
  `throughput: jobs/s and Node CPU µs per job (the contender's own process), medians of ${rounds} rounds, ${jobs} jobs per drain`,
];
for (const database of databases) {
  const here = contenders.filter((contender) => contender.database === database);
  if (here.length === 0) continue;
  const counts = workersOf(database);
  const header = [
    `${names[database]}: queue`,
    ...counts.flatMap((w) => [`${w} worker${w === 1 ? "" : "s"}`, "µs CPU/job"]),
  ];
  const rows = here.map((contender) => [
    contender.label,
    ...counts.flatMap((w) => [
      String(find(contender.id, w)?.median ?? "-"),
      String(find(contender.id, w)?.medianCpuMicrosPerJob ?? "-"),
    ]),
  ]);
  const widths = header.map((_, column) =>
    Math.max(...[header, ...rows].map((row) => (row[column] ?? "").length)),
  );
  lines.push("");
  for (const row of [header, ...rows])
    lines.push(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    );
}
lines.push("", "ratios: rowclaim ÷ other, of median jobs/s (and of median Node CPU per job)", "");
for (const ratio of ratios) {
  lines.push(
    `${ratio.subject.padEnd(34)} ÷ ${ratio.versus.padEnd(24)} at ${String(ratio.workers).padStart(2)} worker(s): ${ratio.ratio.toFixed(2).padStart(6)}   (CPU/job ${ratio.cpuRatio.toFixed(2)})`,
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
    workers: serverWorkers,
    rounds,
    latencySamples,
    handler:
      settings.handler === "async"
        ? "async: async (job) => { await work(job.payload) }, work an async no-op"
        : "sync: returns at once",
    sqliteWorkers,
    rowclaimSubscribe: settings.subscribe,
    rowclaimThroughputPrefetch: settings.prefetch,
    measured:
      "each contender in a process of its own; from its first claim to the moment every job is settled (the database holds no unfinished job of the drain); Node CPU per job: that process's user + system CPU over the same span ÷ jobs",
    latencyMeasured:
      "before the drains, on idle databases, in the same number of interleaved rounds (each round a share of every queue's jobs, after 20 not counted); p50 and p99 of all of a queue's jobs",
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
  const versus =
    entry.database === "postgres"
      ? "graphile-worker"
      : entry.database === "mysql"
        ? "bulk-loop-mysql"
        : entry.id.endsWith("-normal")
          ? "plainjob"
          : "sqlite-loop-full";
  const ratio = ratios.find(
    (r) => r.subject === entry.id && r.versus === versus && r.workers === entry.workers,
  );
  return ratio === undefined ? undefined : `(${ratio.ratio.toFixed(2)}× ${versus})`;
};
const panels: ChartPanel[] = databaseNames
  .map((database) => ({
    title:
      database === "postgres"
        ? `PostgreSQL ${String(result.machine.postgres).split(" ")[0]}`
        : database === "mysql"
          ? `MariaDB/MySQL ${String(result.machine.mysql)}`
          : `SQLite ${String(result.machine.sqlite)}`,
    groups: workersOf(database).map((workers) => ({
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
    `${jobs.toLocaleString("en-US")} pre-inserted no-op jobs, median of ${rounds} interleaved rounds; ${String(result.machine.cores)} cores, Node ${process.version}; rowclaim ${Object.keys(flags.subscribe).length === 0 ? "with its defaults" : `with ${JSON.stringify(flags.subscribe)}`}`,
    panels,
  ),
);
log(`wrote ${join(outDir, "results.json")} and ${join(outDir, "results.svg")}`);
