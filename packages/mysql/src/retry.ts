/**
 * Bounded retry of claim transactions that hit a deadlock (1213) or a lock wait timeout (1205):
 * InnoDB rolls such a transaction back, and the claim runs again rather than surface the
 * error or lose rows.
 *
 * @module
 */
import { classifyError } from "./normalize-error.js";

/** How many times a claim runs at most. */
export const maxClaimRuns = 5;

/**
 * Runs `work` until it succeeds, retrying deadlocks and lock wait timeouts up to
 * {@link maxClaimRuns} runs in all, with a short random pause between runs.
 */
export async function withDeadlockRetry<T>(work: () => Promise<T>, runs: number = maxClaimRuns): Promise<T> {
  for (let run = 1; ; run += 1) {
    try {
      return await work();
    } catch (error) {
      if (run >= runs || !classifyError(error).retryable) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 10 * run) + 1));
    }
  }
}
