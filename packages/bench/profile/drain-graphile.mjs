// graphile-worker's drain on the same terms as drain.mjs (tuned: local queue 500, completions
// batched with delay 0), in a schema of its own: prints its Node CPU per job beside rowclaim's.
//   node packages/bench/profile/drain-graphile.mjs <workers> [jobs]
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";

const [workersArg = "8", jobsArg = "10000"] = process.argv.slice(2);
const workers = Number(workersArg);
const jobs = Number(jobsArg);
const schema = "graphile_worker_hotpath_profile";
const logger = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`[graphile-worker] ${message}\n`);
});
const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:5432/test", max: workers + 2 });
const utils = await makeWorkerUtils({ pgPool: pool, logger, schema });
await utils.migrate();
await pool.query(`DELETE FROM ${schema}._private_jobs`);
for (let at = 0; at < jobs; at += 1000) {
  const part = Array.from({ length: Math.min(1000, jobs - at) }, (_, i) => ({
    identifier: "noop",
    payload: { n: at + i, body: "x".repeat(32) },
  }));
  await utils.addJobs(part);
}
async function work(_payload) {}
let handled = 0;
let lastHandled;
// No timer runs until the last handler returned (as drain.mjs): then the completions are waited for.
const allHandled = new Promise((resolve) => {
  lastHandled = resolve;
});
const cpuBefore = process.cpuUsage();
const started = performance.now();
const runner = await run({
  pgPool: pool,
  concurrency: workers,
  noHandleSignals: true,
  logger,
  schema,
  taskList: {
    noop: async (payload) => {
      await work(payload);
      handled += 1;
      if (handled === jobs) lastHandled();
    },
  },
  preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
});
await allHandled;
for (;;) {
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}._private_jobs`);
  if (rows[0].n === 0) break;
  await new Promise((resolve) => setTimeout(resolve, 1));
}
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
await runner.stop();
await utils.release();
await pool.end();
console.log(
  JSON.stringify({
    database: "postgres",
    form: "graphile-worker 0.18",
    workers,
    jobs,
    jobsPerSecond: Math.round((jobs / ms) * 1000),
    cpuMicrosPerJob: Number(((cpu.user + cpu.system) / jobs).toFixed(1)),
    userMicrosPerJob: Number((cpu.user / jobs).toFixed(1)),
  }),
);
