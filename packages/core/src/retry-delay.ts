/**
 * How a retry's delay is honoured on each table, so that a failing handler never spins:
 *
 * - a table with a `runAt` column: the release writes the due time (`runAt = now + delay`);
 * - a lease table without `runAt`: the lease is moved to the due time and the row let go
 *   (`HeldRow.delay`); no claim takes it before then, in any process;
 * - a row lock or advisory lock table without `runAt`: the delivery keeps its row held (the
 *   batch's transaction, or the key's lock and its connection) until the due time, then
 *   releases it; its worker waits with it, so that the connections in use stay within
 *   `workers + 1`. Every process passes over a held row.
 *
 * In every case the subscription wakes when the row is due (`due-wake.ts`).
 *
 * @module
 */
import type { TableDefinition } from "./table.js";

/** How a table holds a retry's delay: see the module's notes. */
export type RetryDelayWay = "runAt" | "lease" | "hold";

/** How `table` holds a retry's delay. */
export function retryDelayWay(table: TableDefinition): RetryDelayWay {
  if (table.columns.runAt !== undefined) return "runAt";
  return table.form === "lease" ? "lease" : "hold";
}

/** The longest a timer is armed for at once (Node's timers hold at most 2^31 − 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Resolves once `now()` reaches `due` (milliseconds of the host's clock), or at once when
 * `stopped` aborts (the subscription stops: the row is released then, early).
 */
export function untilDue(due: number, now: () => number, stopped: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (stopped.aborted) {
      resolve();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      stopped.removeEventListener("abort", done);
      resolve();
    };
    const arm = (): void => {
      const left = due - now();
      if (left <= 0) {
        done();
        return;
      }
      // A timer may fire a little early, and a controlled clock may not have moved: look again then.
      timer = setTimeout(arm, Math.min(MAX_TIMER_MS, left));
    };
    stopped.addEventListener("abort", done, { once: true });
    arm();
  });
}
