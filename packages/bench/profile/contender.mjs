// One contender of the workspace benchmark, run in this process exactly as its own process runs it
// in the benchmark (`src/contender-process.ts`: fill, a full GC, a drain timed by `DrainRun`),
// to profile it or to compare builds. Run from the built bench (`pnpm --filter @rowclaim/bench build`):
//
//   node --expose-gc packages/bench/profile/contender.mjs <id> [workers=8] [jobs=10000] [rounds=1]
//   PROFILE=/tmp/lease.cpuprofile node --expose-gc packages/bench/profile/contender.mjs rowclaim-pg-lease-prefetch-500 8
//
// Prints one JSON line a round (jobs/s, Node CPU µs/job). PROFILE=<file>: a CPU profile of the
// last round's drain alone (summarise it with summarise.mjs). Not a benchmark: `src/` is.
import { DrainRun } from "../dist/contender.js";
import { contenderOf } from "./contender-of.mjs";
import { startRecording } from "./recording.mjs";

const [id, workersArg = "8", jobsArg = "10000", roundsArg = "1"] = process.argv.slice(2);
if (id === undefined) throw new Error("usage: contender.mjs <id> [workers] [jobs] [rounds]");
const workers = Number(workersArg);
const jobs = Number(jobsArg);
const rounds = Number(roundsArg);
const { contender, work } = await contenderOf(id, workers);
const profileFile = process.env.PROFILE;
for (let round = 1; round <= rounds; round += 1) {
  await contender.fill(jobs);
  globalThis.gc?.();
  const recording = await startRecording("cpu", round === rounds ? profileFile : undefined);
  const run = new DrainRun(work);
  const done = await contender.drain(workers, jobs, run);
  const { ms, cpuMicros } = run.figures();
  await recording.stop();
  console.log(
    JSON.stringify({
      id,
      workers,
      jobs: done,
      round,
      jobsPerSecond: Math.round((done / ms) * 1000),
      cpuMicrosPerJob: Number((cpuMicros / done).toFixed(1)),
    }),
  );
}
await contender.close();
