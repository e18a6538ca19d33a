// Measures rowclaim's SQLite lease form with the driver's defaults (synchronous FULL) beside a
// hand-written loop of the same claim and fenced delete, at 1 worker, in one process run.
// Usage: node bench/default-vs-loop.mjs <loop|rowclaim|both> [jobs] [full|normal] [rounds] [async|io]
// The handler: `async` awaits an empty async function (microtasks only, the issue's handler);
// `io` awaits one event-loop turn (setImmediate), as a handler waiting on I/O does; `timer`
// awaits a 15 ms timer (longer than the claim loop's 10 ms turn), as a handler doing real work.
// The files go to os.tmpdir(): TMPDIR=/dev/shm puts them on tmpfs, where a sync costs nothing.
// Prints jobs/s, process CPU µs per job, and (with RC_COUNT=1) statements per job.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBroker, defineTable } from "@rowclaim/core";
import Database from "better-sqlite3";
import { createSqliteDriver } from "../dist/index.js";

const [mode = "both", jobsArg = "3000", sync = "full", roundsArg = "3", handler = "async"] =
  process.argv.slice(2);
const jobs = Number(jobsArg);
const rounds = Number(roundsArg);
const count = process.env.RC_COUNT === "1";
const dir = mkdtempSync(join(tmpdir(), "rc-sqlite-default-"));
const table = defineTable({
  name: "jobs",
  columns: {
    id: "id",
    payload: "payload",
    attempt: "attempt",
    runAt: "run_at",
    priority: "priority",
    lockedUntil: "locked_until",
  },
});
const work =
  handler === "io"
    ? () => new Promise((resolve) => setImmediate(resolve))
    : handler === "timer"
      ? () => new Promise((resolve) => setTimeout(resolve, 15))
      : async () => {};
let n = 0;

function fill(file) {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE "jobs" ("id" INTEGER PRIMARY KEY, "payload" TEXT NOT NULL, "attempt" INTEGER NOT NULL DEFAULT 1,
    "run_at" INTEGER, "priority" INTEGER NOT NULL DEFAULT 0, "locked_until" INTEGER);
    CREATE INDEX "jobs_claim_order" ON "jobs" ("priority", "run_at", "id");`);
  const insert = db.prepare(`INSERT INTO "jobs" ("payload") VALUES (?)`);
  db.transaction(() => {
    for (let i = 0; i < jobs; i++) insert.run(JSON.stringify({ n: i }));
  })();
  db.close();
}

function walSize(file) {
  if (process.env.RC_WAL === "1")
    console.log(
      `  -wal ${statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? "gone"} bytes, db ${statSync(file).size} bytes`,
    );
}

async function loop(file) {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${sync.toUpperCase()}`);
  const claim = db.prepare(
    `UPDATE "jobs" SET "locked_until" = @expiry, "attempt" = "attempt" + 1 WHERE "id" IN (SELECT "id" FROM "jobs" WHERE ("run_at" IS NULL OR "run_at" <= @now) AND ("locked_until" IS NULL OR "locked_until" <= @now) ORDER BY "priority", "run_at", "id" LIMIT 1) RETURNING "id", "payload", "locked_until"`,
  );
  const settle = db.prepare(`DELETE FROM "jobs" WHERE "id" = @id AND "locked_until" = @token`);
  let done = 0;
  // Named, so that a CPU profile shows each statement's time.
  const loopClaim = (now) => claim.get({ now, expiry: now + 60_000 });
  const loopDelete = (row) => settle.run({ id: row.id, token: row.locked_until }).changes;
  const start = performance.now();
  for (;;) {
    const row = loopClaim(Date.now());
    if (row === undefined) break;
    await work(JSON.parse(row.payload));
    done += loopDelete(row);
  }
  const ms = performance.now() - start;
  walSize(file);
  db.close();
  return { ms, done };
}

async function rowclaim(file) {
  const statements = new Map();
  const options = count
    ? {
        verbose: (text) => {
          const sql = text.replace(/-?\d+(\.\d+)?/g, "?").replace(/\s+/g, " ");
          statements.set(sql, (statements.get(sql) ?? 0) + 1);
        },
      }
    : {};
  let driver;
  if (count) {
    const db = new Database(file, { timeout: 200, ...options });
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${sync.toUpperCase()}`);
    driver = createSqliteDriver({ database: db });
  } else {
    driver = createSqliteDriver(
      sync === "full" ? { filename: file } : { filename: file, synchronous: "normal" },
    );
  }
  const broker = createBroker({ driver });
  let acked = 0;
  let resolveDone;
  const finished = new Promise((resolve) => {
    resolveDone = resolve;
  });
  const start = performance.now();
  const subscription = await broker.subscribe(
    table,
    async (job) => {
      await work(job.payload);
    },
    { workers: 1 },
  );
  subscription.on?.("acked", () => {});
  const poll = setInterval(() => {
    if (subscription.stats.acked >= jobs) resolveDone();
  }, 2);
  await finished;
  const ms = performance.now() - start;
  walSize(file);
  clearInterval(poll);
  acked = subscription.stats.acked;
  await subscription.stop();
  await broker.close();
  if (count) {
    driver.database.close();
    const sorted = [...statements].sort((a, b) => b[1] - a[1]);
    for (const [sql, k] of sorted)
      console.log(`  ${(k / jobs).toFixed(3)}/job  ${sql.slice(0, 110).replace(/\s+/g, " ")}`);
  }
  return { ms, done: acked };
}

async function measure(kind) {
  const file = join(dir, `${kind}-${n++}.db`);
  fill(file);
  const cpu0 = process.cpuUsage();
  const result = await (kind === "loop" ? loop(file) : rowclaim(file));
  const cpu = process.cpuUsage(cpu0);
  return {
    jobsPerSecond: (result.done / result.ms) * 1000,
    cpuPerJob: (cpu.user + cpu.system) / result.done,
    sysPerJob: cpu.system / result.done,
    done: result.done,
  };
}

/** CPU ticks (user, system) of each thread of this process, by thread name. */
function threadTicks() {
  const out = {};
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const key = `${name}#${tid}`;
      out[key] = [Number(fields[11]), Number(fields[12])];
    } catch {}
  }
  return out;
}
if (process.env.RC_THREADS === "1") process.on("exit", () => console.log(threadTicks()));

const kinds = mode === "both" ? ["loop", "rowclaim"] : [mode];
const results = Object.fromEntries(kinds.map((k) => [k, []]));
for (let r = 0; r < rounds; r++) for (const k of kinds) results[k].push(await measure(k));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const k of kinds) {
  const jps = median(results[k].map((x) => x.jobsPerSecond));
  const cpu = median(results[k].map((x) => x.cpuPerJob));
  const sys = median(results[k].map((x) => x.sysPerJob));
  console.log(
    `${k.padEnd(9)} ${sync} ${handler}: ${jps.toFixed(0)} jobs/s, Node CPU ${cpu.toFixed(0)} µs/job (sys ${sys.toFixed(0)}) (rounds: ${results[k].map((x) => x.jobsPerSecond.toFixed(0)).join(", ")})`,
  );
}
if (kinds.length === 2) {
  const ratio =
    median(results.rowclaim.map((x) => x.jobsPerSecond)) / median(results.loop.map((x) => x.jobsPerSecond));
  console.log(`rowclaim / loop: ${ratio.toFixed(2)}x`);
}
rmSync(dir, { recursive: true, force: true });
