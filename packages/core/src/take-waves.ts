/**
 * Taking candidates in waves, the way the advisory lock form claims on a server: each take
 * locks one candidate's key on a connection of its own, so the takes of a claim run side by
 * side, as many at once as rows are still wanted, wave after wave until the claim holds enough
 * rows or the candidates run out. What a take does (its statements, its connection) stays in
 * the driver; the waves, and what a claim keeps when a take fails, are written here.
 *
 * @module
 */
import type { Logger } from "./logger.js";

/**
 * What one take of a candidate came to: the claimed row (`T`), `null` to pass over (the row
 * is no longer claimable, or the key is in work here), `"refused"` when another session holds
 * the key, or `"starved"` when no connection was to be had without waiting (the claim then stops
 * rather than hold taken rows while it waits).
 */
export type TakeOutcome<T> = T | null | "refused" | "starved";

/** How a run of waves ended ({@link takeInWaves}). */
export interface WavesEnd {
  /** The index of the first candidate not tried: the candidates from here on are spare. */
  readonly next: number;
  /** Some take answered `"refused"`. */
  readonly refused: boolean;
  /** Why the waves stopped early: a take failed (`failure` holds its error), or was starved. */
  readonly stopped: "failed" | "starved" | null;
  /** The first error a take threw, when `stopped` is `"failed"`. */
  readonly failure?: unknown;
}

/**
 * Takes `candidates` (from index `from`) in waves, pushing each row taken onto `taken`, until
 * `taken` holds `limit` rows or the candidates run out. A wave tries as many candidates as rows
 * are still wanted, side by side; `take` is told whether its candidate is the first of the claim
 * (nothing taken yet, the wave's first: the one take that may wait for a connection). The waves
 * stop after a wave in which a take failed or was starved, and, with `stopOnRefusal`, after a
 * wave in which one was refused. A failed take does not reject: the end says so, and the caller
 * decides ({@link keepTakenOnFailure}).
 */
export async function takeInWaves<C, T>(
  candidates: readonly C[],
  from: number,
  limit: number,
  taken: T[],
  take: (candidate: C, first: boolean) => Promise<TakeOutcome<T>>,
  stopOnRefusal = false,
): Promise<WavesEnd> {
  let next = from;
  let refused = false;
  while (taken.length < limit && next < candidates.length) {
    const wave = candidates.slice(next, next + limit - taken.length);
    next += wave.length;
    const first = taken.length === 0;
    const outcomes = await Promise.allSettled(
      wave.map((candidate, index) => take(candidate, first && index === 0)),
    );
    let failure: unknown;
    let failed = false;
    let starved = false;
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") {
        if (!failed) failure = outcome.reason;
        failed = true;
      } else if (outcome.value === "starved") starved = true;
      else if (outcome.value === "refused") refused = true;
      else if (outcome.value !== null) taken.push(outcome.value);
    }
    if (failed) return { next, refused, stopped: "failed", failure };
    if (starved) return { next, refused, stopped: "starved" };
    if (refused && stopOnRefusal) break;
  }
  return { next, refused, stopped: null };
}

/**
 * What a claim does when a step failed after it may have taken rows: with none taken, it throws
 * `error` (normalised by the caller); with rows taken, it logs `error` and keeps them (they are
 * locked and counted, and are delivered), naming the table and `step` ("taking a row", "reading
 * more candidates").
 */
export function keepTakenOnFailure(
  logger: Logger,
  table: string,
  step: string,
  taken: number,
  error: unknown,
): void {
  if (taken === 0) throw error;
  logger.error(
    `Table "${table}" (advisory lock form): ${step} failed; keeping the ${taken} row(s) already taken.`,
    { err: error, table },
  );
}
