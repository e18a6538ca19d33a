/**
 * What every queue in the benchmark offers: fill its queue with N no-op jobs (not timed), then
 * drain them with a number of workers (timed, from the moment it starts consuming to the moment
 * the database holds no unfinished job of the run).
 *
 * @module
 */

/** Where a contender keeps its jobs. */
export type Database = "postgres" | "sqlite";

/** One queue under test, in one configuration. */
export interface Contender {
  /** A short stable id (`rowclaim-pg-lease`, `graphile-worker`, …). */
  readonly id: string;
  /** The name shown in the table and the chart. */
  readonly label: string;
  readonly database: Database;
  /** What the configuration is, in words (printed, and kept in the JSON). */
  readonly settings: string;
  /** Puts `jobs` no-op jobs in the queue, after removing anything left from an earlier drain. */
  fill(jobs: number): Promise<void>;
  /** Drains the queue with `workers` handlers at once; resolves the milliseconds it took and the jobs done. */
  drain(workers: number, jobs: number): Promise<{ readonly ms: number; readonly done: number }>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Resolves once `check()` resolves true, checking every `everyMs`; rejects after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  everyMs = 2,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The jobs' payloads: `{ n }`. */
export function payloads(jobs: number): { n: number }[] {
  return Array.from({ length: jobs }, (_, n) => ({ n }));
}

/** Splits `items` into chunks of `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}
