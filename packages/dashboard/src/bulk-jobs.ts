/**
 * Actions over everything a filter matches, in bounded batches with progress: a bulk job runs
 * one batch at a time in the background (each batch one call of a core function over at most
 * `batchSize` rows), and its page shows how far it got. Jobs live in the process that runs the
 * dashboard; finished ones are forgotten after a while.
 *
 * @module
 */
import type { RowAction } from "./model.js";

/** One batch's outcome: the rows it changed, and where the next batch starts (`undefined`: that was the last). */
export interface BatchStep<Cursor> {
  readonly changed: number;
  readonly next: Cursor | undefined;
}

/** A bulk job as its page shows it. */
export interface BulkJob {
  readonly id: string;
  readonly table: string;
  readonly action: RowAction | "pause" | "resume";
  /** What the filter was, for people. */
  readonly description: string;
  /** Who started it. */
  readonly user: string;
  /** The page it was started from. */
  readonly back: string;
  readonly startedAt: Date;
  /** Rows changed so far. */
  readonly done: number;
  /** Batches run so far. */
  readonly batches: number;
  /** The rows the filter matched when the job started, where known (a capped count is a lower bound). */
  readonly total: number | null;
  readonly finished: boolean;
  /** Why the job stopped early, if it did. */
  readonly error: string | undefined;
}

type MutableJob = { -readonly [K in keyof BulkJob]: BulkJob[K] };

/** How long a finished job stays visible. */
export const FINISHED_JOB_TTL_MS = 30 * 60_000;

/** The bulk jobs of one dashboard. */
export class BulkJobs {
  readonly #jobs = new Map<string, MutableJob>();
  #sequence = 0;

  /**
   * Starts a job that calls `step` with the cursor of the previous batch (`undefined` first)
   * until it returns no next cursor, and returns it at once. A step that runs batches of its
   * own (core's `redrive`) tells its progress through `report`.
   */
  start<Cursor>(
    what: Pick<BulkJob, "table" | "action" | "description" | "user" | "back" | "total">,
    step: (cursor: Cursor | undefined, report: (changedSoFar: number) => void) => Promise<BatchStep<Cursor>>,
    onEnd: () => void = () => undefined,
  ): BulkJob {
    this.#forgetOld();
    this.#sequence += 1;
    const id = `${Date.now().toString(36)}${this.#sequence.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const job: MutableJob = {
      id,
      ...what,
      startedAt: new Date(),
      done: 0,
      batches: 0,
      finished: false,
      error: undefined,
    };
    this.#jobs.set(id, job);
    void (async () => {
      let cursor: Cursor | undefined;
      try {
        for (;;) {
          const before = job.done;
          const result = await step(cursor, (changedSoFar) => {
            job.done = before + changedSoFar;
          });
          job.done = before + result.changed;
          job.batches += 1;
          if (result.next === undefined) break;
          cursor = result.next;
        }
      } catch (error) {
        job.error = error instanceof Error ? error.message : String(error);
      } finally {
        job.finished = true;
        onEnd();
      }
    })();
    return { ...job };
  }

  /** The job `id`, as it is now. */
  get(id: string): BulkJob | undefined {
    const job = this.#jobs.get(id);
    return job === undefined ? undefined : { ...job };
  }

  /** Resolves once every job has finished (for a clean shutdown and for tests). */
  async settled(): Promise<void> {
    while ([...this.#jobs.values()].some((job) => !job.finished)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  #forgetOld(): void {
    const cutoff = Date.now() - FINISHED_JOB_TTL_MS;
    for (const [id, job] of this.#jobs) {
      if (job.finished && job.startedAt.getTime() < cutoff) this.#jobs.delete(id);
    }
  }
}
