// A drain to profile and to count Node CPU per job: pre-inserts rows, subscribes with a minimal
// async handler, and prints the process's CPU time (user + system) between the subscribe and
// the last settlement, divided by the jobs. Run from the built packages:
//
//   node packages/bench/profile/drain.mjs <postgres|mysql|sqlite> <lease|rowLock> <workers> [prefetch] [jobs]
//   PROFILE=/tmp/drain.cpuprofile node packages/bench/profile/drain.mjs postgres lease 8 500
//
// It prints one JSON line. Not a benchmark: the workspace benchmark (src/) is.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBroker, defineTable } from "@rowclaim/core";
import { startRecording } from "./recording.mjs";

const [database = "postgres", form = "lease", workersArg = "8", prefetchArg = "0", jobsArg = "10000"] =
  process.argv.slice(2);
const workers = Number(workersArg);
const prefetch = Number(prefetchArg);
const jobs = Number(jobsArg);
const name = `rowclaim_profile_${database}_${form.toLowerCase()}_${process.pid}`;

const table = defineTable({
  name,
  columns: {
    id: "id",
    payload: "payload",
    attempt: "attempt",
    runAt: "run_at",
    priority: "priority",
    ...(form === "lease" ? { lockedUntil: "locked_until" } : {}),
  },
});

async function work(_payload) {}

async function openDriver() {
  if (database === "postgres") {
    const { createPostgresDriver } = await import("@rowclaim/postgres");
    return createPostgresDriver({ url: "postgres://postgres@127.0.0.1:5432/test", max: workers + 2 });
  }
  if (database === "mysql") {
    const { createMysqlDriver } = await import("../../mysql/dist/index.js");
    return createMysqlDriver({ url: "mysql://root@127.0.0.1:3306/test", connectionLimit: workers + 2 });
  }
  const { createSqliteDriver } = await import("@rowclaim/sqlite");
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-profile-"));
  const driver = createSqliteDriver({ filename: join(directory, "profile.db") });
  driver.database.exec(driver.schemaSql(table));
  process.on("exit", () => rmSync(directory, { recursive: true, force: true }));
  return driver;
}

const driver = await openDriver();
// COUNT=1 (postgres): counts the statements the drain sent, by name.
const counts = new Map();
let counting = false;
if (process.env.COUNT === "1" && database === "postgres") {
  const pg = (await import("pg")).default;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(config, ...rest) {
    if (counting) {
      const key =
        typeof config === "string" ? config.slice(0, 40) : (config.name ?? config.text.slice(0, 40));
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return query.call(this, config, ...rest);
  };
}
const broker = createBroker({ driver });
async function run(text) {
  if (database === "postgres") await driver.pool.query(text);
  else if (database === "mysql") {
    for (const one of text.split(/;\s*\n/).filter((part) => part.trim() !== "")) await driver.pool.query(one);
  }
}
if (database !== "sqlite") await run(driver.schemaSql(table));
const payloads = Array.from({ length: jobs }, (_, n) => ({ n, body: "x".repeat(32) }));
for (let at = 0; at < jobs; at += 500) {
  await broker.publishMany(
    table,
    payloads.slice(at, at + 500).map((payload) => ({ payload })),
  );
}

// PROFILE=<file>: a CPU profile of the drain alone (not the fill), written to <file>.
const profileFile = process.env.PROFILE;
const cpuRecording = await startRecording("cpu", profileFile);
counting = true;
// ALLOC=<file>: a sampled allocation profile of the drain (`.heapprofile`, bytes by stack).
const allocFile = process.env.ALLOC;
const allocRecording = await startRecording("alloc", allocFile);
const cpuBefore = process.cpuUsage();
const started = performance.now();
// No timer runs until the last handler returned (a poll would wake the process, and cost CPU,
// hundreds of times a second): then the last settlements are waited for.
let handled = 0;
let lastHandled;
const allHandled = new Promise((resolve) => {
  lastHandled = resolve;
});
const subscription = await broker.subscribe(
  table,
  async (job) => {
    await work(job.payload);
    handled += 1;
    if (handled === jobs) lastHandled();
  },
  { workers, ...(prefetch > 0 ? { prefetch } : {}) },
);
await allHandled;
while (subscription.stats.acked < jobs) await new Promise((resolve) => setTimeout(resolve, 1));
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
await allocRecording.stop();
await cpuRecording.stop();
await subscription.stop();
await run(database === "mysql" ? `DROP TABLE IF EXISTS \`${name}\`` : `DROP TABLE IF EXISTS "${name}"`);
await broker.close();
console.log(
  JSON.stringify({
    database,
    form,
    workers,
    prefetch,
    jobs,
    jobsPerSecond: Math.round((jobs / ms) * 1000),
    cpuMicrosPerJob: Number(((cpu.user + cpu.system) / jobs).toFixed(1)),
    userMicrosPerJob: Number((cpu.user / jobs).toFixed(1)),
    ...(counts.size > 0 ? { statements: Object.fromEntries(counts) } : {}),
  }),
);
