/**
 * What a handler returns: the outcome its row is settled by.
 *
 * @module
 */
import { InvalidArgumentError } from "./errors.js";

/** Finish the row: delete it, or set `processedAt` where the table has that column. */
export interface AckOutcome {
  readonly kind: "ack";
}
/** Make the row due again at once, keeping its place in claim order. */
export interface RetryOutcome {
  readonly kind: "retry";
}
/** Make the row due again after `delayMs` (needs a `runAt` column; without one it retries at once). */
export interface RetryAfterOutcome {
  readonly kind: "retryAfter";
  readonly delayMs: number;
}
/** Finish the row as ack does; says the message was discarded rather than handled. */
export interface DropOutcome {
  readonly kind: "drop";
}
/** Move the row to the table's dead-letter group or table. */
export interface DeadLetterOutcome {
  readonly kind: "deadLetter";
}

/** Every outcome a handler may return. */
export type Outcome = AckOutcome | RetryOutcome | RetryAfterOutcome | DropOutcome | DeadLetterOutcome;

const ACK: AckOutcome = Object.freeze({ kind: "ack" });
const RETRY: RetryOutcome = Object.freeze({ kind: "retry" });
const DROP: DropOutcome = Object.freeze({ kind: "drop" });
const DEAD_LETTER: DeadLetterOutcome = Object.freeze({ kind: "deadLetter" });

/** Finish the row: delete it, or mark `processedAt` where the table has that column. */
export function ack(): AckOutcome {
  return ACK;
}

/** Make the row due again at once. In a FIFO group the row stays the head. */
export function retry(): RetryOutcome {
  return RETRY;
}

/**
 * Make the row due again after `delayMs` milliseconds. Needs a `runAt` column; on a table
 * without one the row is retried at once and a warning is logged.
 *
 * @throws {InvalidArgumentError} when `delayMs` is negative or not a finite number.
 */
export function retryAfter(delayMs: number): RetryAfterOutcome {
  if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) {
    throw new InvalidArgumentError(
      `retryAfter(${String(delayMs)}): the delay must be a finite number of milliseconds, 0 or more.`,
    );
  }
  return Object.freeze({ kind: "retryAfter", delayMs });
}

/** Finish the row as `ack()` does. */
export function drop(): DropOutcome {
  return DROP;
}

/** Move the row to the dead-letter group or table the table (or subscription) names. */
export function deadLetter(): DeadLetterOutcome {
  return DEAD_LETTER;
}

/** Whether `value` is an outcome made by one of this module's functions (or shaped like one). */
export function isOutcome(value: unknown): value is Outcome {
  if (typeof value !== "object" || value === null) return false;
  const kind = (value as { kind?: unknown }).kind;
  if (kind === "retryAfter") {
    const delay = (value as { delayMs?: unknown }).delayMs;
    return typeof delay === "number" && Number.isFinite(delay) && delay >= 0;
  }
  return kind === "ack" || kind === "retry" || kind === "drop" || kind === "deadLetter";
}
