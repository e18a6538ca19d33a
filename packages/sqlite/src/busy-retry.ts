/**
 * Retrying through SQLite lock contention. better-sqlite3 waits up to the busy timeout inside a
 * statement, blocking the event loop, so that timeout is short and the driver retries what still
 * meets `SQLITE_BUSY` / `SQLITE_LOCKED` a bounded number of times, waiting asynchronously.
 *
 * @module
 */
import type { ErrorContext } from "@rowclaim/core/driver";
import type { SqliteDatabase } from "./database.js";
import { isBusyError, normalizeError } from "./normalize-error.js";

/** How contention is retried. */
export interface BusyRetryOptions {
  /** How many times an operation is tried at most. Default 25. */
  readonly attempts?: number;
  /** The first wait, in milliseconds; doubled after each try. Default 5. */
  readonly initialDelayMs?: number;
  /** The longest wait, in milliseconds. Default 250. */
  readonly maxDelayMs?: number;
}

/** {@link BusyRetryOptions} with every value filled. */
export type BusyRetryPolicy = Required<BusyRetryOptions>;

/** Fills the defaults of {@link BusyRetryOptions}. */
export function busyRetryPolicy(options: BusyRetryOptions = {}): BusyRetryPolicy {
  return {
    attempts: Math.max(1, Math.floor(options.attempts ?? 25)),
    initialDelayMs: Math.max(0, options.initialDelayMs ?? 5),
    maxDelayMs: Math.max(0, options.maxDelayMs ?? 250),
  };
}

/** Thrown, and retried as contention, while the user's own transaction is open on a shared `Database`. */
class ForeignTransactionError extends Error {
  /** Always `"SQLITE_BUSY"`, so that it is retried as contention. */
  readonly code = "SQLITE_BUSY";
  constructor() {
    super(
      "The SQLite connection is inside a transaction the rowclaim driver did not open; waiting for it to end.",
    );
    this.name = "ForeignTransactionError";
  }
}

/**
 * Runs `operation` (synchronous work on `db`, leaving no transaction open when it throws) at
 * once, and again after a growing wait while it meets contention. A transaction open on `db`
 * before a try is contention too, unless `foreignTransaction` is `"join"`: then `operation` runs
 * inside it (a publish on the user's own connection).
 *
 * @throws the last contention error once every try met contention, or any other error at once.
 */
export function retryBusy<T>(
  db: SqliteDatabase,
  policy: BusyRetryPolicy,
  operation: () => T,
  foreignTransaction: "wait" | "join" = "wait",
): Promise<T> {
  const attempt = (): T => {
    if (foreignTransaction === "wait" && db.open && db.inTransaction) throw new ForeignTransactionError();
    return operation();
  };
  try {
    return Promise.resolve(attempt());
  } catch (error) {
    if (!isBusyError(error) || policy.attempts <= 1) return Promise.reject(error);
  }
  return (async () => {
    let delay = policy.initialDelayMs;
    for (let tried = 1; ; tried += 1) {
      await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random())));
      delay = Math.min(policy.maxDelayMs, Math.max(1, delay * 2));
      try {
        return attempt();
      } catch (error) {
        if (!isBusyError(error) || tried + 1 >= policy.attempts) throw error;
      }
    }
  })();
}

/** {@link retryBusy}, with the failure turned into the driver's error for `context` (the table and what the driver was doing). */
export async function retryBusyAs<T>(
  db: SqliteDatabase,
  policy: BusyRetryPolicy,
  context: ErrorContext,
  operation: () => T,
  foreignTransaction: "wait" | "join" = "wait",
): Promise<T> {
  try {
    return await retryBusy(db, policy, operation, foreignTransaction);
  } catch (error) {
    throw normalizeError(error, context);
  }
}
