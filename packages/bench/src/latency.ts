/**
 * Publish → handler latency: one job at a time into an idle queue, from just before the publish
 * call to the handler's first line, in one process and from another process (a child publishing;
 * PostgreSQL wakes the subscriber with LISTEN/NOTIFY where the queue offers it). Wall-clock time
 * at sub-millisecond resolution (`performance.timeOrigin + performance.now()`), which both
 * processes on one machine share.
 *
 * @module
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Broker, type ClaimFormName, createBroker } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";
import { createSqliteDriver } from "@rowclaim/sqlite";
import Database from "better-sqlite3";
import { makeWorkerUtils, type Runner, run } from "graphile-worker";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { better, defineQueue, defineWorker } from "plainjob";
import { benchTable } from "./bench-table.js";
import { graphileTuning, quietLogger } from "./graphile-worker.js";
import { logErrors } from "./pg-boss.js";
import { percentile, round } from "./statistics.js";

/** Milliseconds since the epoch, with sub-millisecond resolution. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Where the job is published from. */
export type LatencyScope = "in-process" | "cross-process";

/** One subject's latency figures. */
export interface LatencyResult {
  readonly id: string;
  readonly label: string;
  readonly scope: LatencyScope;
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly settings: string;
}

/** A publisher: in this process, or the child's. */
export interface LatencyPublisher {
  /** Publishes one job stamped `sentAt` (a child stamps its own); resolves once it is sent on its way. */
  publish(sentAt: number): Promise<void>;
  /** Resolves once the last publish returned (a child's: asked after its handler ran). Default: at once. */
  settled?(): Promise<void>;
  close(): Promise<void>;
}

/** A queue whose latency is measured: its consumer here, its publisher here or in a child. */
interface LatencySubject {
  readonly id: string;
  readonly label: string;
  readonly settings: string;
  /**
   * Starts consuming (`onReceive` gets each job's `sentAt`) and resolves the in-process
   * publisher: the consumer's own broker, runner or queue, as a user publishes.
   */
  start(onReceive: (sentAt: number) => void): Promise<LatencyPublisher>;
  /** Stops consuming and closes. */
  stop(): Promise<void>;
}

const latencyTable = (form: ClaimFormName) => benchTable(`rowclaim_wslat_${form.toLowerCase()}`, form);

const formLabel: Record<ClaimFormName, string> = {
  lease: "lease",
  rowLock: "row lock",
  advisory: "advisory",
};

function rowclaimPublisher(broker: Broker, form: ClaimFormName): LatencyPublisher {
  const table = latencyTable(form);
  return {
    async publish(sentAt) {
      await broker.publish(table, { sentAt }, form === "advisory" ? { values: { account: "a" } } : {});
    },
    async close() {},
  };
}

/** Opens the publisher of subject `id` in a process of its own (see `publisher.ts`). */
export async function openChildPublisher(id: string, url: string): Promise<LatencyPublisher> {
  if (id.startsWith("rowclaim-pg-")) {
    const form = id.slice("rowclaim-pg-".length) as ClaimFormName;
    const broker = createBroker({ driver: createPostgresDriver({ url, max: 2, notify: true }) });
    return { ...rowclaimPublisher(broker, form), close: () => broker.close() };
  }
  if (id === "graphile-worker") {
    const utils = await makeWorkerUtils({ connectionString: url, logger: quietLogger });
    return {
      publish: async (sentAt) => void (await utils.addJob("latency", { sentAt })),
      close: async () => void (await utils.release()),
    };
  }
  throw new Error(`no cross-process publisher for ${id}`);
}

function rowclaimPostgresSubject(url: string, form: ClaimFormName): LatencySubject {
  const table = latencyTable(form);
  let broker: Broker | undefined;
  return {
    id: `rowclaim-pg-${form}`,
    label: `rowclaim ${formLabel[form]}`,
    settings: "createPostgresDriver({ url, notify: true }); subscribe(table, handler) with its defaults",
    async start(onReceive) {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      const driver = createPostgresDriver({ url, max: 4, notify: true });
      await admin.query(`DROP TABLE IF EXISTS "${table.name}"`);
      await admin.query(driver.schemaSql(table));
      await admin.end();
      broker = createBroker({ driver });
      await broker.subscribe(table, (job) => {
        onReceive((job.payload as { sentAt: number }).sentAt);
      });
      return rowclaimPublisher(broker, form);
    },
    async stop() {
      await broker?.close();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`DROP TABLE IF EXISTS "${table.name}"`);
      await admin.end();
    },
  };
}

function rowclaimSqliteSubject(file: string): LatencySubject {
  const table = latencyTable("lease");
  let broker: Broker | undefined;
  return {
    id: "rowclaim-sqlite-lease",
    label: "rowclaim lease",
    settings: "createSqliteDriver({ filename }); subscribe(table, handler) with its defaults",
    async start(onReceive) {
      const driver = createSqliteDriver({ filename: file });
      driver.database.exec(driver.schemaSql(table));
      broker = createBroker({ driver });
      await broker.subscribe(table, (job) => {
        onReceive((job.payload as { sentAt: number }).sentAt);
      });
      return rowclaimPublisher(broker, "lease");
    },
    async stop() {
      await broker?.close();
    },
  };
}

function graphileSubject(url: string): LatencySubject {
  let runner: Runner | undefined;
  return {
    id: "graphile-worker",
    label: "graphile-worker",
    settings: "tuned as in the throughput runs (local queue 500, batch delays 0), concurrency 1",
    async start(onReceive) {
      runner = await run({
        connectionString: url,
        concurrency: 1,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: {
          latency: async (payload) => {
            onReceive((payload as { sentAt: number }).sentAt);
          },
        },
        preset: graphileTuning,
      });
      const own = runner;
      return { publish: async (sentAt) => void (await own.addJob("latency", { sentAt })), async close() {} };
    },
    async stop() {
      await runner?.stop();
    },
  };
}

function pgBossSubject(url: string): LatencySubject {
  const queue = "rowclaim_wslat";
  let boss: PgBoss | undefined;
  return {
    id: "pg-boss",
    label: "pg-boss",
    settings:
      "12.38.0, work(queue, { batchSize: 500, pollingIntervalSeconds: 0.5 }); send() in the same process",
    async start(onReceive) {
      const own = new PgBoss({ connectionString: url, max: 4, supervise: false, schedule: false });
      boss = own;
      logErrors(own);
      await own.start();
      await own.createQueue(queue);
      await own.work(
        queue,
        { batchSize: 500, pollingIntervalSeconds: 0.5 },
        async (jobs: readonly { data: unknown }[]) => {
          for (const job of jobs) onReceive((job.data as { sentAt: number }).sentAt);
        },
      );
      return { publish: async (sentAt) => void (await own.send(queue, { sentAt })), async close() {} };
    },
    async stop() {
      await boss?.getDb().executeSql("DELETE FROM pgboss.job WHERE name = $1", [queue]);
      await boss?.deleteQueue(queue);
      await boss?.stop({ graceful: false });
    },
  };
}

function plainjobSubject(file: string): LatencySubject {
  let close: (() => Promise<void>) | undefined;
  return {
    id: "plainjob",
    label: "plainjob",
    settings: "one defineWorker, defaults (it polls every second when idle)",
    async start(onReceive) {
      const db = new Database(file);
      const quiet = {
        error: () => undefined,
        warn: () => undefined,
        info: () => undefined,
        debug: () => undefined,
      };
      const queue = defineQueue({ connection: better(db), logger: quiet });
      const worker = defineWorker(
        "latency",
        (job) => {
          onReceive((JSON.parse(job.data) as { sentAt: number }).sentAt);
        },
        { queue, logger: quiet },
      );
      const running = worker.start();
      close = async () => {
        await worker.stop();
        await running;
        queue.close();
        db.close();
      };
      return { publish: async (sentAt) => void queue.add("latency", { sentAt }), async close() {} };
    },
    async stop() {
      await close?.();
    },
  };
}

/** Jobs published before the counted ones (not counted): the code on both sides runs optimised. */
const WARM_UP_JOBS = 20;

/** How long one job may take to arrive before the run fails. */
const RECEIVE_TIMEOUT_MS = 60_000;

/**
 * Starts `subject`, publishes `samples` jobs one at a time into its idle queue (after
 * {@link WARM_UP_JOBS} not counted), stops it, and returns each job's latency in milliseconds.
 * The next job waits for the handler (a promise the handler resolves: no polling timer in the
 * measuring process) and for the publish to return, then for an idle moment.
 */
async function sample(
  subject: LatencySubject,
  scope: LatencyScope,
  samples: number,
  url: string,
): Promise<number[]> {
  const latencies: number[] = [];
  let arrived: (() => void) | undefined;
  const local = await subject.start((sentAt) => {
    latencies.push(wallNow() - sentAt);
    arrived?.();
  });
  const one = async (pub: LatencyPublisher, what: string): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const received = new Promise<void>((resolve, reject) => {
      arrived = resolve;
      timer = setTimeout(
        () => reject(new Error(`timed out after ${RECEIVE_TIMEOUT_MS} ms waiting for ${what}`)),
        RECEIVE_TIMEOUT_MS,
      );
    });
    try {
      // An idle moment between jobs, as between real publishes.
      await new Promise((resolve) => setTimeout(resolve, 5));
      await Promise.all([pub.publish(wallNow()), received]);
      await pub.settled?.();
    } finally {
      clearTimeout(timer);
      arrived = undefined;
    }
  };
  let pub: LatencyPublisher | undefined;
  try {
    pub = scope === "in-process" ? local : await childPublisher(subject.id, url);
    for (let n = 1; n <= Math.min(WARM_UP_JOBS, samples); n += 1)
      await one(pub, `${subject.label}'s warm-up job`);
    latencies.length = 0;
    for (let n = 1; n <= samples; n += 1) await one(pub, `${subject.label}'s job ${n}`);
  } finally {
    await pub?.close();
    await subject.stop();
  }
  return latencies;
}

/**
 * A publisher running in a child process (`publisher.js`), driven over IPC one job at a time.
 * The child does not answer while the job is on its way: the parent asks whether the publish
 * returned only after the handler ran, so no IPC message reaches the measuring process in the
 * measured interval.
 */
async function childPublisher(id: string, url: string): Promise<LatencyPublisher> {
  const script = fileURLToPath(new URL("./publisher.js", import.meta.url));
  const child = fork(script, [id, url], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const replies: ((message: unknown) => void)[] = [];
  child.on("message", (message) => replies.shift()?.(message));
  const tell = (message: object): Promise<void> =>
    new Promise((resolve, reject) => {
      child.send(message, (error) => (error === null ? resolve() : reject(error)));
    });
  const ask = (message: object): Promise<unknown> =>
    new Promise((resolve, reject) => {
      replies.push(resolve);
      tell(message).catch(reject);
    });
  await ask({ type: "ready?" });
  return {
    // The child takes its own sentAt just before it publishes.
    async publish() {
      await tell({ type: "publish" });
    },
    async settled() {
      await ask({ type: "published?" });
    },
    async close() {
      await ask({ type: "close" });
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

/** One turn of the latency run: subject `index` measured with `count` jobs. */
export interface LatencyTurn {
  readonly index: number;
  readonly count: number;
}

/**
 * The turns of `rounds` interleaved rounds over subjects that want `totals[i]` jobs each: every
 * round gives each subject an equal share (the last round what is left; none once it has all),
 * starting one subject later than the round before.
 *
 * @throws {RangeError} `rounds` is not a whole number of at least 1.
 */
export function latencyTurns(totals: readonly number[], rounds: number): LatencyTurn[] {
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new RangeError(`rounds must be a whole number of at least 1, got ${rounds}`);
  const turns: LatencyTurn[] = [];
  for (let r = 0; r < rounds; r += 1) {
    for (let turn = 0; turn < totals.length; turn += 1) {
      const index = (turn + r) % totals.length;
      const total = totals[index] as number;
      const share = Math.ceil(total / rounds);
      const count = Math.min(share, total - share * r);
      if (count > 0) turns.push({ index, count });
    }
  }
  return turns;
}

/** One subject in one scope, how many jobs it is measured with in all, and their latencies so far. */
interface LatencyPlan {
  readonly id: string;
  readonly label: string;
  readonly settings: string;
  readonly scope: LatencyScope;
  readonly samples: number;
  readonly make: () => LatencySubject;
  readonly latencies: number[];
}

/**
 * Measures every subject's latency, in process and (where it wakes across processes) from a
 * child; `include` picks subjects by id (default: every one). The subjects take turns in
 * `rounds` interleaved rounds (each round a share of every subject's jobs, in an order that
 * rotates), so a slow spell of the machine or the database falls on all of them alike; the
 * percentiles are of all of a subject's jobs.
 */
export async function measureLatencies(
  url: string,
  samples: number,
  rounds: number,
  include: (id: string) => boolean = () => true,
): Promise<LatencyResult[]> {
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-wslat-"));
  const plans: LatencyPlan[] = [];
  const plan = (id: string, scope: LatencyScope, make: () => LatencySubject, count = samples) => {
    if (!include(id)) return;
    // A subject does nothing until started: one made here only names itself.
    const { label, settings } = make();
    plans.push({ id, label, settings, scope, samples: count, make, latencies: [] });
  };
  for (const form of ["lease", "rowLock", "advisory"] as const) {
    for (const scope of ["in-process", "cross-process"] as const)
      plan(`rowclaim-pg-${form}`, scope, () => rowclaimPostgresSubject(url, form));
  }
  for (const scope of ["in-process", "cross-process"] as const)
    plan("graphile-worker", scope, () => graphileSubject(url));
  plan("rowclaim-sqlite-lease", "in-process", () => rowclaimSqliteSubject(join(directory, "rowclaim.db")));
  // These two poll when idle (0.5 s and 1 s): a few samples say enough.
  const few = Math.min(samples, 10);
  plan("pg-boss", "in-process", () => pgBossSubject(url), few);
  plan("plainjob", "in-process", () => plainjobSubject(join(directory, "plainjob.db")), few);
  try {
    for (const { index, count } of latencyTurns(
      plans.map((entry) => entry.samples),
      rounds,
    )) {
      const { make, scope, latencies } = plans[index] as LatencyPlan;
      latencies.push(...(await sample(make(), scope, count, url)));
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  return plans.map(({ id, label, scope, settings, latencies }) => ({
    id,
    label,
    scope,
    samples: latencies.length,
    p50Ms: round(percentile(latencies, 50), 2),
    p99Ms: round(percentile(latencies, 99), 2),
    settings,
  }));
}
