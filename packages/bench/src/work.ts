/**
 * The handler every contender runs. By default an async function that awaits the job's work, the
 * shape every real handler has (`async (job) => { await work(job.payload) }`); `--handler sync`
 * runs a handler that returns at once instead. The work itself does nothing: the benchmark
 * measures the queue, not the job. The async one is the command line's (`rowclaim/bench`), so
 * `rowclaim bench` and this benchmark run the same handler.
 *
 * @module
 */
import { asyncNoOpHandler } from "rowclaim/bench";

/** Which handler the contenders run. */
export type HandlerKind = "async" | "sync";

/** A handler over a job's payload. */
export type Handler = (payload: unknown) => Promise<void> | undefined;

/** A handler of `kind` over a payload: awaits an async no-op (async) or returns at once (sync). */
export function handlerOf(kind: HandlerKind): Handler {
  return kind === "async" ? asyncNoOpHandler : () => undefined;
}
