/**
 * The handler every contender runs. By default an async function that awaits the job's work, the
 * shape every real handler has (`async (job) => { await work(job.payload) }`); `--handler sync`
 * runs a handler that returns at once instead. The work itself does nothing: the benchmark
 * measures the queue, not the job.
 *
 * @module
 */

/** Which handler the contenders run. */
export type HandlerKind = "async" | "sync";

/** The job's work: nothing, awaited as a real handler awaits its own. */
export async function work(_payload: unknown): Promise<void> {}

/** A handler of `kind` over a payload: awaits {@link work} (async) or returns at once (sync). */
export function handlerOf(kind: HandlerKind): (payload: unknown) => Promise<void> | undefined {
  return kind === "async"
    ? async (payload) => {
        await work(payload);
      }
    : () => undefined;
}

/** Reads the `--handler` flag. */
export function parseHandlerKind(value: string): HandlerKind {
  if (value === "async" || value === "sync") return value;
  throw new Error(`--handler takes async or sync, not ${JSON.stringify(value)}`);
}
