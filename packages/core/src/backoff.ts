/**
 * The retry delay for handlers that throw: capped exponential backoff.
 *
 * @module
 */

/** How a thrown handler's row is delayed. */
export interface BackoffOptions {
  /** The delay after the first failure, in milliseconds. Default 1000. */
  readonly baseMs?: number;
  /** The longest delay, in milliseconds. Default 3,600,000 (one hour). */
  readonly maxMs?: number;
}

/**
 * The delay before delivery `attempt + 1` after delivery `attempt` threw:
 * `min(maxMs, baseMs × 2^(attempt − 1))`.
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 1000;
  const max = options.maxMs ?? 3_600_000;
  const exponent = Math.max(0, Math.min(attempt - 1, 52));
  return Math.min(max, base * 2 ** exponent);
}
