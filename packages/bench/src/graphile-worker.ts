/**
 * graphile-worker on PostgreSQL, tuned for throughput as its documentation describes: a local
 * queue of 500 jobs fetched (and locked) at once, and job completions batched with delay 0.
 *
 * @module
 */
import { EventEmitter } from "node:events";
import { Logger, makeWorkerUtils, run, type WorkerEvents, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import { type Contender, chunks, payloads, waitUntil, withinDrain } from "./contender.js";

/** A logger that prints only errors (graphile-worker logs every start and stop at info). */
export const quietLogger = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`[graphile-worker] ${message}\n`);
});

/** graphile-worker's tuned preset: local queue 500, batched completions and failures with delay 0. */
export const graphileTuning = {
  worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
} as const;

/** graphile-worker on the PostgreSQL database at `url`. */
export function graphileWorker(url: string, poolSize: number): Contender {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on("error", (error) => process.stderr.write(`[graphile-worker pool] ${error.message}\n`));
  let utils: WorkerUtils | undefined;
  const unfinished = async (): Promise<number> => {
    const result = await pool.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs");
    return (result.rows[0] as { n: number }).n;
  };
  return {
    id: "graphile-worker",
    label: "graphile-worker",
    database: "postgres",
    settings: `0.18.0, localQueue.size 500, completeJobBatchDelay 0, failJobBatchDelay 0, concurrency = workers`,
    async fill(jobs) {
      utils ??= await makeWorkerUtils({ pgPool: pool, logger: quietLogger });
      await utils.migrate();
      // Empty and vacuumed, as the other queues start each drain from a new table or partition.
      await pool.query("DELETE FROM graphile_worker._private_jobs");
      await pool.query("VACUUM graphile_worker._private_jobs");
      for (const part of chunks(payloads(jobs), 1000)) {
        await utils.addJobs(part.map((payload) => ({ identifier: "noop", payload })));
      }
    },
    async drain(workers, jobs, drainRun) {
      let handled = 0;
      // Its first claim: the local queue starts fetching as it is made (setting its mode), a
      // worker without one asks for a job; both come after graphile-worker's startup.
      const events: WorkerEvents = new EventEmitter();
      events.once("localQueue:setMode", () => drainRun.claiming());
      events.once("worker:getJob:start", () => drainRun.claiming());
      const runner = await run({
        pgPool: pool,
        events,
        concurrency: workers,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: {
          noop: async (payload) => {
            await drainRun.handler(payload);
            handled += 1;
          },
        },
        preset: graphileTuning,
      });
      await withinDrain(drainRun.handled(jobs), "graphile-worker's handlers");
      await waitUntil(() => handled >= jobs, "graphile-worker's handlers to return", 60_000);
      // Completions are batched: the drain ends when the database holds no job.
      await waitUntil(async () => (await unfinished()) === 0, "graphile-worker's completions", 60_000);
      drainRun.settled();
      await runner.stop();
      return handled;
    },
    async close() {
      // Only a contender that filled the queue empties it: a skipped one leaves other runs' jobs alone.
      if (utils !== undefined)
        await pool.query("DELETE FROM graphile_worker._private_jobs").catch(() => undefined);
      await utils?.release();
      await pool.end();
    },
  };
}
