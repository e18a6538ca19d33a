/**
 * pg-boss 12 on PostgreSQL: one `work()` with `localConcurrency` = workers, each fetching
 * `batchSize` jobs at a time and fetching again at once while its fetches come back full
 * (`burstWhenBatchFull`), so no worker waits out its polling interval while jobs are waiting.
 * pg-boss 12 declares Node 22 in `engines` but installs and runs on Node 20 here.
 *
 * @module
 */

import pg from "pg";
import { PgBoss } from "pg-boss";
import { type Contender, chunks, payloads, waitUntil, withinDrain } from "./contender.js";

/** pg-boss with `batchSize` jobs per fetch, on the PostgreSQL database at `url`. */
export function pgBoss(url: string, poolSize: number, batchSize: number): Contender {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  let boss: PgBoss | undefined;
  // A new queue (so a new partition) for every drain, so completed jobs of earlier drains weigh nothing.
  const queues: string[] = [];
  let queue = "";
  const unfinished = async (): Promise<number> => {
    const result = await admin.query(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')",
      [queue],
    );
    return (result.rows[0] as { n: number }).n;
  };
  return {
    id: `pg-boss-${batchSize}`,
    label: `pg-boss batch ${batchSize}`,
    database: "postgres",
    settings: `12.38.0, work(queue, { batchSize: ${batchSize}, localConcurrency: workers, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }), supervise and schedule off`,
    async fill(jobs) {
      if (boss === undefined) {
        boss = new PgBoss({ connectionString: url, max: poolSize, supervise: false, schedule: false });
        logErrors(boss);
        await boss.start();
      }
      queue = `rowclaim_wsbench_${batchSize}_${queues.length + 1}`;
      queues.push(queue);
      await boss.createQueue(queue);
      for (const part of chunks(payloads(jobs), 1000)) {
        await boss.insert(
          queue,
          part.map((data) => ({ data })),
        );
      }
    },
    async drain(workers, jobs, run) {
      const b = boss as PgBoss;
      let handled = 0;
      // work() starts the fetch loop without a round trip of its own.
      run.claiming();
      await b.work(
        queue,
        { batchSize, localConcurrency: workers, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
        async (batch) => {
          await Promise.all(batch.map((job) => run.handler(job.data)));
          handled += batch.length;
        },
      );
      await withinDrain(run.handled(jobs), "pg-boss's handlers");
      await waitUntil(() => handled >= jobs, "pg-boss's handlers to return", 60_000);
      await waitUntil(async () => (await unfinished()) === 0, "pg-boss's completions", 60_000);
      run.settled();
      await b.offWork(queue);
      return handled;
    },
    async close() {
      if (boss !== undefined) {
        await admin.query("DELETE FROM pgboss.job WHERE name = ANY($1)", [queues]);
        for (const name of queues) await boss.deleteQueue(name);
        await boss.stop({ graceful: false });
      }
      await admin.end();
    },
  };
}

/**
 * Writes pg-boss's `error` events to stderr. pg-boss 12 types its emitter with a generic `EventEmitter` that
 * the workspace's `@types/node` 20 does not declare, so the listener is added through Node's own type.
 */
export function logErrors(boss: PgBoss): void {
  (boss as unknown as NodeJS.EventEmitter).on("error", (error: Error) => {
    process.stderr.write(`[pg-boss] ${error.message}\n`);
  });
}
