// The broker's own work a job, without a database: a lease subscription (`workers`, `prefetch`)
// drains rows that a synthetic claimer hands out from memory, each claim and coalesced ack
// answered a macrotask later (as a socket's reply would be), the rows decoded by core's
// `decodeClaimedRow` from records shaped as `pg` reads the bench table. What it prints is the
// Node CPU a job that core itself spends (scheduling, delivery, settlement, decoding), the part
// of the prefetch drain's figure that no driver or database change can cut. A profiling aid to
// compare builds of core, not a benchmark and not a test: run from the built bench,
//
//   node --expose-gc packages/bench/profile/core-only.mjs [workers=8] [jobs=100000] [rounds=5] [prefetch=500]
//   PROFILE=/tmp/core.cpuprofile node --expose-gc packages/bench/profile/core-only.mjs
//   ALLOC=/tmp/core.heapprofile node --expose-gc packages/bench/profile/core-only.mjs   (summarise-alloc.mjs)
import { createBroker } from "@rowclaim/core";
import { decodeClaimedRow } from "@rowclaim/core/driver";
import { asyncNoOpHandler } from "rowclaim/bench";
import { benchTable } from "../dist/bench-table.js";
import { DrainRun, waitUntil, withinDrain } from "../dist/contender.js";
import { startRecording } from "./recording.mjs";

const [workersArg = "8", jobsArg = "100000", roundsArg = "5", prefetchArg = "500"] = process.argv.slice(2);
const workers = Number(workersArg);
const jobs = Number(jobsArg);
const rounds = Number(roundsArg);
const prefetch = Number(prefetchArg);
const table = benchTable("rowclaim_core_only", "lease");

/** A reply a macrotask later, as from a socket. */
const later = (value) => new Promise((resolve) => setImmediate(() => resolve(value)));

/** Rows from memory: `left` more to hand out; every settlement lands. */
class MemoryLeaseClaimer {
  form = "lease";
  left = 0;
  next = 1;
  claim(request) {
    return later(this.#take(request));
  }
  claimWithAcks(acks, request) {
    return later({ settled: acks.rows.map(() => true), claimed: this.#take(request) });
  }
  settleMany(acks) {
    return later(acks.rows.map(() => true));
  }
  settle() {
    return later(undefined);
  }
  extend(held, expiry) {
    return later(held.map(() => ({ form: "lease", expiry })));
  }
  async close() {}
  #take(request) {
    const count = Math.min(request.limit, this.left);
    this.left -= count;
    const token = { form: "lease", expiry: request.expiry };
    const claimed = new Array(count);
    for (let index = 0; index < count; index += 1) {
      const id = this.next++;
      const raw = {
        id: String(id),
        payload: undefined,
        attempt: 1,
        run_at: null,
        priority: 0,
        locked_until: request.expiry,
      };
      claimed[index] = { row: decodeClaimedRow(table, raw, true, `{"n":${id}}`), token };
    }
    return claimed;
  }
}

const claimer = new MemoryLeaseClaimer();
const driver = {
  name: "memory",
  dialect: "memory",
  capabilities: {
    forms: ["lease"],
    fifo: [],
    isolationLevels: [],
    transactionModes: [],
    advisoryScope: "database",
    advisoryLimit: false,
    crossProcessWake: false,
    transactionalPublish: false,
    transactionalHandlers: [],
    controls: false,
  },
  open: async () => claimer,
  publish: async () => [],
  schemaSql: () => "",
  close: async () => {},
};
const broker = createBroker({ driver });
for (let round = 1; round <= rounds; round += 1) {
  claimer.left = jobs;
  globalThis.gc?.();
  const last = round === rounds;
  const cpuRecording = await startRecording("cpu", last ? process.env.PROFILE : undefined);
  const allocRecording = await startRecording("alloc", last ? process.env.ALLOC : undefined);
  // Timed as the benchmark times a drain: from the first claim, no timer until the last handler call.
  const run = new DrainRun(asyncNoOpHandler);
  const subscription = await broker.subscribe(table, (job) => run.handler(job.payload), {
    workers,
    prefetch,
  });
  run.claiming();
  await withinDrain(run.handled(jobs), "the handlers");
  await waitUntil(() => subscription.stats.acked >= jobs, "the acks", 60_000);
  run.settled();
  await subscription.stop();
  await Promise.all([allocRecording.stop(), cpuRecording.stop()]);
  const { ms, cpuMicros } = run.figures();
  console.log(
    JSON.stringify({
      workers,
      prefetch,
      jobs,
      round,
      jobsPerSecond: Math.round((jobs / ms) * 1000),
      cpuMicrosPerJob: Number((cpuMicros / jobs).toFixed(2)),
    }),
  );
}
await broker.close();
