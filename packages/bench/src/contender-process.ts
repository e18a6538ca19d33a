/**
 * One contender's own process: the parent (`main.ts`) starts one per contender, so that each
 * contender's Node CPU is its own (no other queue's timers, pools or garbage in the figure). It
 * creates the contender named on its command line and answers the parent's requests over IPC,
 * one at a time: fill, drain (the run's figures measured here, see `DrainRun`), close.
 *
 * @module
 */
import { DrainRun } from "./contender.js";
import { contenderEntries, type RunSettings } from "./contenders.js";
import { handlerOf } from "./work.js";

/** A request from the parent. */
export type Request =
  | { readonly op: "fill"; readonly jobs: number }
  | { readonly op: "drain"; readonly workers: number; readonly jobs: number }
  | { readonly op: "close" };

/** A reply to the parent (`ready` once, unasked, when the contender exists). */
export type Reply =
  | { readonly op: "ready"; readonly label: string; readonly settings: string }
  | { readonly op: "filled" }
  | { readonly op: "drained"; readonly done: number; readonly ms: number; readonly cpuMicros: number }
  | { readonly op: "closed" }
  | { readonly op: "error"; readonly message: string };

const [id, json] = process.argv.slice(2) as [string, string];
const settings = JSON.parse(json) as RunSettings;
const entry = contenderEntries(settings).find((candidate) => candidate.id === id);
const send = (reply: Reply): void => {
  process.send?.(reply);
};
if (entry === undefined) {
  send({ op: "error", message: `no contender ${id}` });
  process.exit(1);
}
const contender = await entry.create();
if (contender.id !== id) throw new Error(`contender ${id} calls itself ${contender.id}`);
const work = handlerOf(settings.handler);

let queue = Promise.resolve();
process.on("message", (request: Request) => {
  queue = queue.then(async () => {
    try {
      switch (request.op) {
        case "fill":
          await contender.fill(request.jobs);
          send({ op: "filled" });
          break;
        case "drain": {
          // A collection now, so that garbage of the fill is not collected on the drain's time.
          globalThis.gc?.();
          const run = new DrainRun(work);
          const done = await contender.drain(request.workers, request.jobs, run);
          send({ op: "drained", done, ...run.figures() });
          break;
        }
        case "close":
          await contender.close();
          send({ op: "closed" });
          process.disconnect();
          break;
      }
    } catch (error) {
      send({ op: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
  });
});
// A parent that went away leaves nothing running.
process.on("disconnect", () => process.exit(0));
send({ op: "ready", label: contender.label, settings: contender.settings });
