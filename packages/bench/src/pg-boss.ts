/**
 * pg-boss on PostgreSQL, fetching `batchSize` jobs at a time per worker (one `work()` per worker).
 * pg-boss 10 is the last release that runs on Node 20; its worker waits out its polling interval
 * (at least 0.5 s) after every fetch unless a publish in the same process notified it, so a
 * worker drains at most `batchSize` jobs per half second.
 *
 * @module
 */

import pg from "pg";
import PgBoss from "pg-boss";
import { type Contender, chunks, payloads, waitUntil } from "./contender.js";

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
    settings: `10.4.2, work(queue, { batchSize: ${batchSize}, pollingIntervalSeconds: 0.5 }) once per worker, supervise and schedule off`,
    async fill(jobs) {
      if (boss === undefined) {
        boss = new PgBoss({ connectionString: url, max: poolSize, supervise: false, schedule: false });
        boss.on("error", (error: Error) => process.stderr.write(`[pg-boss] ${error.message}\n`));
        await boss.start();
      }
      queue = `rowclaim_wsbench_${batchSize}_${queues.length + 1}`;
      queues.push(queue);
      await boss.createQueue(queue);
      for (const part of chunks(payloads(jobs), 1000)) {
        await boss.insert(part.map((data) => ({ name: queue, data })));
      }
    },
    async drain(workers, jobs) {
      const b = boss as PgBoss;
      let handled = 0;
      const start = performance.now();
      for (let worker = 0; worker < workers; worker += 1) {
        await b.work(queue, { batchSize, pollingIntervalSeconds: 0.5 }, async (batch) => {
          for (const _job of batch) handled += 1;
        });
      }
      await waitUntil(() => handled >= jobs, "pg-boss's handlers", 600_000);
      await waitUntil(async () => (await unfinished()) === 0, "pg-boss's completions", 60_000, 1);
      const ms = performance.now() - start;
      await b.offWork(queue);
      return { ms, done: handled };
    },
    async close() {
      if (boss !== undefined) {
        await admin.query("DELETE FROM pgboss.job WHERE name = ANY($1)", [queues]);
        for (const name of queues) await boss.deleteQueue(name);
        await boss.stop({ graceful: false, wait: true });
      }
      await admin.end();
    },
  };
}
