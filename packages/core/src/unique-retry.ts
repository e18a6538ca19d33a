/**
 * The retry loop of one unique publish, shared by the drivers: a driver's attempt inserts the
 * row or settles with its key's holder, and says when it lost a race (the holder was claimed or
 * finished in between); core runs it again, up to {@link UNIQUE_PUBLISH_ATTEMPTS} times.
 *
 * @module
 */
import { UNIQUE_PUBLISH_ATTEMPTS } from "./unique.js";

/** One driver's way through a unique publish of one row; see {@link retryUniqueAttempt}. */
export interface UniqueAttempt<T> {
  /**
   * Runs the statements of one attempt. Returns the result, or `undefined` where the key's
   * holder changed between the statements (the attempt runs again); throws to stop, or with an
   * error {@link UniqueAttempt.retried} accepts to run again.
   */
  readonly attempt: () => Promise<T | undefined>;
  /** Whether an error thrown by an attempt is a race worth another one (deadlock, serialization failure). */
  readonly retried: (error: unknown) => boolean;
  /**
   * The error thrown when every attempt lost its race.
   *
   * @param last the last retried error, `undefined` where every attempt returned `undefined`.
   */
  readonly exhausted: (last: unknown) => unknown;
}

/**
 * Runs `how.attempt` until it returns a result, throws an error `how.retried` refuses, or
 * {@link UNIQUE_PUBLISH_ATTEMPTS} attempts lost their race (then throws `how.exhausted(last)`).
 *
 * @param attempts how many attempts at the most (tests); {@link UNIQUE_PUBLISH_ATTEMPTS} by default.
 */
export async function retryUniqueAttempt<T>(
  how: UniqueAttempt<T>,
  attempts: number = UNIQUE_PUBLISH_ATTEMPTS,
): Promise<T> {
  let last: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      const result = await how.attempt();
      if (result !== undefined) return result;
    } catch (error) {
      if (!how.retried(error)) throw error;
      last = error;
    }
  }
  throw how.exhausted(last);
}
