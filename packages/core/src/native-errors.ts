/**
 * The skeleton every driver's `normalize-error.ts` fills in: a native error is classified onto a
 * core code (the driver's table of SQLSTATEs, errnos or `SQLITE_*` codes), worded for people (the
 * driver's sentences, which name its database and the fix) and wrapped, with the native error as
 * `cause`, in the error class of that code. The flow and the class for each code are here once;
 * only the code table and the words are the driver's.
 *
 * @module
 */
import {
  AuthenticationError,
  type BrokerError,
  type BrokerErrorCode,
  ClosedError,
  ConnectionLostError,
  ConnectionTimeoutError,
  ConstraintError,
  DeadlockError,
  InvalidArgumentError,
  LockTimeoutError,
  SchemaError,
  UnknownDatabaseError,
} from "./errors.js";

/** The codes a native error can be normalized to: those whose error class needs no more than a message. */
export type NativeErrorCode =
  | "SCHEMA"
  | "CONSTRAINT"
  | "INVALID_ARGUMENT"
  | "CONNECTION_LOST"
  | "CONNECTION_TIMEOUT"
  | "AUTHENTICATION"
  | "UNKNOWN_DATABASE"
  | "DEADLOCK"
  | "LOCK_TIMEOUT"
  | "CLOSED";

/** What a normalized error carries besides its message. */
export interface NativeErrorDetails {
  /** The table the driver was working on. */
  readonly table: string;
  /** The native error. */
  readonly cause: unknown;
  /** For `SCHEMA`: the statement (or the work) that failed. */
  readonly statement?: string | undefined;
  /** For `SCHEMA`: the column the database named, when it named one. */
  readonly column?: string | undefined;
}

/**
 * The rowclaim error of `code`, of the class that code has (`SCHEMA` a {@link SchemaError} with
 * its column and statement, `CONNECTION_TIMEOUT` a {@link ConnectionTimeoutError} whose wait is
 * unknown, `NaN`).
 */
export function nativeErrorOf(
  code: NativeErrorCode,
  message: string,
  details: NativeErrorDetails,
): BrokerError {
  const options = { table: details.table, cause: details.cause };
  switch (code) {
    case "SCHEMA":
      return new SchemaError(message, { ...options, column: details.column, statement: details.statement });
    case "CONSTRAINT":
      return new ConstraintError(message, options);
    case "INVALID_ARGUMENT":
      return new InvalidArgumentError(message, options);
    case "CONNECTION_LOST":
      return new ConnectionLostError(message, options);
    case "CONNECTION_TIMEOUT":
      return new ConnectionTimeoutError(message, { ...options, waitedMs: Number.NaN });
    case "AUTHENTICATION":
      return new AuthenticationError(message, options);
    case "UNKNOWN_DATABASE":
      return new UnknownDatabaseError(message, options);
    case "DEADLOCK":
      return new DeadlockError(message, options);
    case "LOCK_TIMEOUT":
      return new LockTimeoutError(message, options);
    case "CLOSED":
      return new ClosedError(message, options);
  }
}

/** One code's sentence: `where` is the driver's {@link NativeErrorWords.where} of the context, `native` the native message. */
export type NativeErrorSentence = (where: string, native: string, error: unknown) => string;

/** A driver's side of its error normalization: what it knows of its database's errors. */
export interface NativeErrorWords<C extends { readonly table: string }> {
  /**
   * The core code a native error stands for, or `undefined` to pass it on as it is (an error that
   * is already a rowclaim error, or one rowclaim has no code for).
   */
  readonly codeOf: (error: unknown) => BrokerErrorCode | undefined;
  /** Where it happened, as every message begins (`Table "jobs" (lease form), lease claim`). */
  readonly where: (context: C) => string;
  /** The message of each code the driver normalizes to; a code without one passes the error on. */
  readonly sentences: Readonly<Partial<Record<NativeErrorCode, NativeErrorSentence>>>;
  /** For `SCHEMA`: the column the native error names, where the database says it. */
  readonly columnOf?: (error: unknown, native: string) => string | undefined;
  /** For `SCHEMA`: the statement the error keeps (default: the context's `statement`). */
  readonly statementOf?: (context: C) => string | undefined;
}

/**
 * Makes a driver's `normalizeError(error, context)`: classifies `error` with `words.codeOf`; where it
 * maps to a code the driver words, returns the rowclaim error of that code with `error` as
 * `cause`; else returns `error` as it is.
 *
 * @example
 * export const normalizeError = nativeErrorNormalizer<ErrorContext>({
 *   codeOf: codeForError,
 *   where: (context) => `Table "${context.table}" (${context.operation})`,
 *   sentences: { CONSTRAINT: (where, native) => `${where}: … (${native}). Nothing was written.` },
 * });
 */
export function nativeErrorNormalizer<
  C extends { readonly table: string; readonly statement?: string | undefined },
>(words: NativeErrorWords<C>): (error: unknown, context: C) => unknown {
  return (error, context) => {
    const code = words.codeOf(error);
    const sentences: Readonly<Partial<Record<BrokerErrorCode, NativeErrorSentence>>> = words.sentences;
    const sentence = code === undefined ? undefined : sentences[code];
    if (code === undefined || sentence === undefined) return error;
    const native = error instanceof Error ? error.message : String(error);
    return nativeErrorOf(code as NativeErrorCode, sentence(words.where(context), native, error), {
      table: context.table,
      cause: error,
      statement: words.statementOf === undefined ? context.statement : words.statementOf(context),
      column: code === "SCHEMA" ? words.columnOf?.(error, native) : undefined,
    });
  };
}
