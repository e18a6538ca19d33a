/**
 * plainjob on SQLite (better-sqlite3): one `defineWorker` per worker in this process, a new
 * database file for every drain. plainjob opens the file with `journal_mode = WAL` and
 * `synchronous = NORMAL`; rowclaim's SQLite contender is given the same level
 * (`createSqliteDriver({ synchronous: "normal" })`; the driver's default is `"full"`).
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { better, defineQueue, defineWorker, type Queue } from "plainjob";
import { type Contender, payloads, waitUntil, withinDrain } from "./contender.js";

const quiet = {
  error: () => undefined,
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
};

/** plainjob on a SQLite file. */
export function plainjob(): Contender {
  const directory = mkdtempSync(join(tmpdir(), "plainjob-wsbench-"));
  let round = 0;
  let current: { queue: Queue; db: Database.Database } | undefined;
  const closeCurrent = (): void => {
    current?.queue.close();
    current?.db.close();
    current = undefined;
  };
  return {
    id: "plainjob",
    label: "plainjob",
    database: "sqlite",
    settings: `0.0.14, one defineWorker per worker, defaults (WAL, synchronous NORMAL)`,
    async fill(jobs) {
      closeCurrent();
      round += 1;
      const db = new Database(join(directory, `plainjob-${round}.db`));
      const queue = defineQueue({ connection: better(db), logger: quiet });
      queue.addMany("noop", payloads(jobs));
      current = { queue, db };
    },
    async drain(workers, jobs, run) {
      const queue = (current as { queue: Queue }).queue;
      let handled = 0;
      const started = Array.from({ length: workers }, () =>
        defineWorker("noop", (job) => run.handler(job.data), {
          queue,
          logger: quiet,
          // Counted once the job is marked done.
          onCompleted: () => {
            handled += 1;
          },
        }),
      );
      run.claiming();
      const running = started.map((worker) => worker.start());
      await withinDrain(run.handled(jobs), "plainjob's handlers");
      await waitUntil(() => handled >= jobs, "plainjob's completions", 60_000);
      run.settled();
      await Promise.all(started.map((worker) => worker.stop()));
      await Promise.all(running);
      return handled;
    },
    async close() {
      closeCurrent();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
