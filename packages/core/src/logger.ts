/**
 * The loggers the broker and drivers report through.
 *
 * Two conventions exist. rowclaim's own {@link Logger} takes the message first
 * (`error(message, details)`), as `console` does; pino and bunyan take an object first
 * (`error({ err, ...details }, message)`). `createBroker({ logger })` takes either: a logger
 * with a `child()` method is a pino-style one ({@link ObjectFirstLogger}) and is called object
 * first; any other is called message first. The types keep the two apart: a `Logger` has no
 * `child`, so a pino logger cannot be mistaken for one, and its errors are never lost.
 *
 * Whatever the logger, every error the broker logs is in the details' `err` field, where
 * pino's error serializer finds it (message, stack, and the messages and stacks of its causes).
 *
 * @module
 */

/** What accompanies a log message: `err` holds the error, if any; the rest are fields such as `table` and `id`. */
export type LogDetails = Readonly<Record<string, unknown>>;

/**
 * rowclaim's logger: message first, then details, as `console` takes them. Where the broker
 * reports what it cannot throw to a caller (claim loop failures, settlement failures,
 * warnings); `debug` and `info`, where present, receive claim and settlement traces.
 */
export interface Logger {
  /** Something went wrong that rowclaim worked around (for example polling instead of listening). */
  warn(message: string, details?: LogDetails): void;
  /** A failure: a claim, a settlement, a handler that threw. `details.err` holds the error. */
  error(message: string, details?: LogDetails): void;
  /** Subscriptions starting and stopping. Optional. */
  info?(message: string, details?: LogDetails): void;
  /** Every claim and settlement. Optional; called only where present. */
  debug?(message: string, details?: LogDetails): void;
  /**
   * A rowclaim `Logger` has no `child`: a logger that has one (pino, bunyan) takes its object
   * first and is an {@link ObjectFirstLogger}. This keeps a pino logger from type-checking as a
   * `Logger`, whose calls would put the error where pino does not print it.
   */
  readonly child?: never;
}

/**
 * A pino-style logger: an object first (`err` and other fields), then the message. pino and
 * bunyan loggers are such loggers and are passed to `createBroker({ logger })` as they are.
 */
export interface ObjectFirstLogger {
  /** Logs a failure; `details.err` holds the error. */
  error(details: object, message?: string): void;
  /** Logs a warning. */
  warn(details: object, message?: string): void;
  /** Logs subscriptions starting and stopping. */
  info(details: object, message?: string): void;
  /** Logs claims and settlements. */
  debug(details: object, message?: string): void;
  /** Makes a logger with more bound fields (pino, bunyan). Its presence marks the object-first convention. */
  child(bindings: Record<string, unknown>): unknown;
  /** pino: whether a level is on, so that debug traces cost nothing when it is off. */
  isLevelEnabled?(level: string): boolean;
}

/** What `createBroker({ logger })` takes: a rowclaim {@link Logger} or a pino-style {@link ObjectFirstLogger}. */
export type AnyLogger = Logger | ObjectFirstLogger;

/** The default logger: `console.warn` and `console.error` with a `[rowclaim]` prefix; no debug or info. */
export const consoleLogger: Logger = Object.freeze({
  warn(message: string, details?: LogDetails) {
    if (details === undefined) console.warn(`[rowclaim] ${message}`);
    else console.warn(`[rowclaim] ${message}`, details);
  },
  error(message: string, details?: LogDetails) {
    if (details === undefined) console.error(`[rowclaim] ${message}`);
    else console.error(`[rowclaim] ${message}`, details);
  },
});

/** A logger that drops everything. */
export const silentLogger: Logger = Object.freeze({
  warn() {},
  error() {},
});

/** Whether `logger` takes its object first (it has a `child` method, as pino and bunyan do). */
export function isObjectFirstLogger(logger: AnyLogger): logger is ObjectFirstLogger {
  return typeof (logger as { child?: unknown }).child === "function";
}

/**
 * Turns a pino-style logger into a rowclaim {@link Logger}: each call passes the details first
 * (with a driver's `error` field renamed `err`, where pino's serializer looks) and the message
 * second. `debug` and `info` ask `isLevelEnabled` first where the logger has it.
 *
 * `createBroker({ logger: pino() })` does this itself; call it to hand a pino logger to code
 * that takes a `Logger`.
 */
export function fromObjectFirst(logger: ObjectFirstLogger): Logger {
  const fields = (details: LogDetails | undefined): object => withErr(details) ?? {};
  const enabled = (level: string): boolean =>
    logger.isLevelEnabled === undefined || logger.isLevelEnabled(level);
  return Object.freeze({
    warn: (message: string, details?: LogDetails) => logger.warn(fields(details), message),
    error: (message: string, details?: LogDetails) => logger.error(fields(details), message),
    info: (message: string, details?: LogDetails) => {
      if (enabled("info")) logger.info(fields(details), message);
    },
    debug: (message: string, details?: LogDetails) => {
      if (enabled("debug")) logger.debug(fields(details), message);
    },
    isDebugEnabled: () => enabled("debug"),
  });
}

/** A logger as the broker keeps it: message first, and able to say whether debug traces are on. */
export interface BrokerLogger extends Logger {
  /** Whether `debug` would write anything: traces are built only then. */
  isDebugEnabled(): boolean;
}

/** Normalises what `createBroker({ logger })` was given into the broker's own logger. */
export function brokerLogger(given: AnyLogger | undefined): BrokerLogger {
  if (given === undefined) return { ...consoleLogger, isDebugEnabled: () => false };
  if (isObjectFirstLogger(given)) return fromObjectFirst(given) as BrokerLogger;
  const debug = given.debug;
  const logger: BrokerLogger = {
    warn: (message, details) => given.warn(message, withErr(details)),
    error: (message, details) => given.error(message, withErr(details)),
    isDebugEnabled: () => debug !== undefined,
  };
  if (given.info !== undefined) {
    const info = given.info.bind(given);
    logger.info = (message, details) => info(message, withErr(details));
  }
  if (debug !== undefined) {
    const bound = debug.bind(given);
    logger.debug = (message, details) => bound(message, withErr(details));
  }
  return logger;
}

/** The details with an `error` field (as some drivers log) renamed `err`, so that every logged error is in `err`. */
function withErr(details: LogDetails | undefined): LogDetails | undefined {
  if (details === undefined || details.error === undefined || details.err !== undefined) return details;
  const { error, ...rest } = details;
  return { ...rest, err: error };
}
