// Where a drain's CPU goes: the contender's own Node CPU and the PostgreSQL server's CPU (every
// `postgres` process, from /proc/<pid>/schedstat, nanoseconds) per job, over the drain alone,
// median of the rounds. Linux only, with the server on this machine. Run from the built bench:
//
//   node --expose-gc packages/bench/profile/cpu-split.mjs <id> [workers=8] [jobs=10000] [rounds=5]
//
// Not a benchmark (`src/` is): it explains one. The server's figure counts whatever else the
// server does meanwhile, so run it on an otherwise idle server.
import { readdirSync, readFileSync } from "node:fs";
import { DrainRun } from "../dist/contender.js";
import { contenderOf } from "./contender-of.mjs";

const [id, workersArg = "8", jobsArg = "10000", roundsArg = "5"] = process.argv.slice(2);
if (id === undefined) throw new Error("usage: cpu-split.mjs <id> [workers] [jobs] [rounds]");
const workers = Number(workersArg);
const jobs = Number(jobsArg);
const rounds = Number(roundsArg);

/** CPU time of every process named postgres*, in milliseconds. */
function serverCpuMs() {
  let sum = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (!stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).startsWith("postgres")) continue;
      sum += Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sum;
}

const { contender, work } = await contenderOf(id, workers);
const runs = [];
for (let round = 1; round <= rounds; round += 1) {
  await contender.fill(jobs);
  globalThis.gc?.();
  const before = serverCpuMs();
  const run = new DrainRun(work);
  const done = await contender.drain(workers, jobs, run);
  const { ms, cpuMicros } = run.figures();
  const serverMs = serverCpuMs() - before;
  runs.push({ perSecond: (done / ms) * 1000, node: cpuMicros / done, server: (serverMs * 1000) / done });
}
await contender.close();
const median = (key) => runs.map((run) => run[key]).sort((a, b) => a - b)[Math.floor(runs.length / 2)];
console.log(
  JSON.stringify({
    id,
    workers,
    jobsPerSecond: Math.round(median("perSecond")),
    nodeMicrosPerJob: Number(median("node").toFixed(1)),
    serverMicrosPerJob: Number(median("server").toFixed(1)),
  }),
);
