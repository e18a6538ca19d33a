/**
 * The logger the broker and drivers report through.
 *
 * @module
 */

/** Where the broker reports what it cannot throw to a caller (claim loop failures, settlement failures, warnings). */
export interface Logger {
  warn(message: string, details?: Readonly<Record<string, unknown>>): void;
  error(message: string, details?: Readonly<Record<string, unknown>>): void;
}

/** The default logger: `console.warn` and `console.error` with a `[rowclaim]` prefix. */
export const consoleLogger: Logger = Object.freeze({
  warn(message: string, details?: Readonly<Record<string, unknown>>) {
    if (details === undefined) console.warn(`[rowclaim] ${message}`);
    else console.warn(`[rowclaim] ${message}`, details);
  },
  error(message: string, details?: Readonly<Record<string, unknown>>) {
    if (details === undefined) console.error(`[rowclaim] ${message}`);
    else console.error(`[rowclaim] ${message}`, details);
  },
});

/** A logger that drops everything. */
export const silentLogger: Logger = Object.freeze({
  warn() {},
  error() {},
});
