/**
 * What every queue in the benchmark offers: fill its queue with N no-op jobs (not timed), then
 * drain them with a number of workers, running the handler of a {@link DrainRun} on every job and
 * telling it when the last settlement is committed. Every contender is timed the same way, by
 * its run: from the moment it starts claiming ({@link DrainRun.claiming}) to the moment the
 * database holds no unfinished job of the drain; its Node CPU over the same span.
 *
 * @module
 */
import type { Handler } from "./work.js";

/** The databases a contender keeps its jobs in, in the order the results show them. */
export const databaseNames = ["postgres", "mysql", "sqlite"] as const;

/** Where a contender keeps its jobs. */
export type Database = (typeof databaseNames)[number];

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
  /**
   * Drains the queue with `workers` handlers at once: calls `run.claiming()` as its first claim
   * is sent (after any startup), runs each job through `run.handler`, and calls `run.settled()`
   * the moment every job is settled (before stopping anything); resolves the jobs done.
   */
  drain(workers: number, jobs: number, run: DrainRun): Promise<number>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** One drain's figures: the time and this process's CPU from the first claim to the last settlement. */
export interface DrainFigures {
  readonly ms: number;
  /** User + system CPU of the process, µs. */
  readonly cpuMicros: number;
}

/**
 * The clock of one drain: {@link DrainRun.claiming} marks its start (the time and
 * `process.cpuUsage()`) as the contender's first claim is sent, `settled()` its end. A contender
 * awaits {@link DrainRun.handled} (no timer: the handler's own calls resolve it) and only then
 * polls for its last settlement, so no queue pays for a timer through the whole drain that the
 * hand-written loops do not pay.
 */
export class DrainRun {
  /** The handler every job goes through. */
  readonly handler: Handler;
  #startedAt: number | undefined;
  #cpuAtStart: NodeJS.CpuUsage | undefined;
  #figures: DrainFigures | undefined;
  #calls = 0;
  #awaited: { readonly calls: number; readonly resolve: () => void } | undefined;

  constructor(work: Handler) {
    this.handler = (payload) => {
      this.#calls += 1;
      if (this.#awaited !== undefined && this.#calls >= this.#awaited.calls) this.#awaited.resolve();
      return work(payload);
    };
  }

  /**
   * Marks the drain's start: the contender's first claim is being sent (a queue's startup,
   * probes and LISTEN before it are not timed). Only the first call counts.
   */
  claiming(): void {
    if (this.#startedAt !== undefined) return;
    this.#cpuAtStart = process.cpuUsage();
    this.#startedAt = performance.now();
  }

  /** Resolves once the handler has been called `calls` times (every job of the drain in hand). */
  handled(calls: number): Promise<void> {
    if (this.#calls >= calls) return Promise.resolve();
    return new Promise((resolve) => {
      this.#awaited = { calls, resolve };
    });
  }

  /** Marks the moment every job of the drain is settled (the first call counts). */
  settled(): void {
    if (this.#figures !== undefined) return;
    if (this.#startedAt === undefined) throw new Error("the drain settled without marking its first claim");
    const ms = performance.now() - this.#startedAt;
    const cpu = process.cpuUsage(this.#cpuAtStart);
    this.#figures = { ms, cpuMicros: cpu.user + cpu.system };
  }

  /** The drain's figures, once {@link DrainRun.settled} was called. */
  figures(): DrainFigures {
    if (this.#figures === undefined) throw new Error("the drain did not report its last settlement");
    return this.#figures;
  }
}

/**
 * Resolves once `check()` resolves true, checking every `everyMs`; rejects after `timeoutMs`.
 * For a drain's tail only, after {@link DrainRun.handled}: a timer through a whole drain costs
 * the queue CPU the loops do not spend.
 */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  everyMs = 1,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Resolves with `done`, or rejects once `timeoutMs` passed waiting for `what` (one timer, not a poll). */
export async function withinDrain(done: Promise<void>, what: string, timeoutMs = 600_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([done, timeout]);
  } finally {
    clearTimeout(timer);
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
