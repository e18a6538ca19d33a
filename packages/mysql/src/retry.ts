/**
 * Bounded retry of transactions InnoDB rolled back for a deadlock (1213) or a lock wait timeout
 * (1205): they run again rather than surface the error or lose rows.
 *
 * @module
 */
import { classifyError } from "./normalize-error.js";

/** Runs `work` until it succeeds, retrying deadlocks and lock wait timeouts up to 5 runs in all, with a short random pause between runs. */
export async function withDeadlockRetry<T>(work: () => Promise<T>, runs = 5): Promise<T> {
  for (let run = 1; ; run += 1) {
    try {
      return await work();
    } catch (error) {
      if (run >= runs || !classifyError(error).retryable) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 10 * run) + 1));
    }
  }
}
