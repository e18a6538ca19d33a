/**
 * Maps MySQL/MariaDB errors (by `errno`, or the client's `code` for lost connections) onto
 * rowclaim's stable codes and onto what the driver does about them.
 *
 * @module
 */
import { BrokerError, type BrokerErrorCode } from "@rowclaim/core";
import { type ErrorContext, nativeErrorNormalizer } from "@rowclaim/core/driver";

/** What the driver does about a native error. */
export interface ErrorClass {
  /** The rowclaim code it becomes, or `undefined` to pass the native error on as it is. */
  readonly code: BrokerErrorCode | undefined;
  /** A deadlock or a lock wait timeout: the claim's transaction is retried (bounded). */
  readonly retryable: boolean;
  /** The row is locked by another session and the statement would not wait (`NOWAIT`). */
  readonly lockNotAvailable: boolean;
  /** The session is gone (killed, network): the connection must be destroyed, not reused. */
  readonly connectionLost: boolean;
}

const plain: ErrorClass = Object.freeze({
  code: undefined,
  retryable: false,
  lockNotAvailable: false,
  connectionLost: false,
});

/** The errors the driver knows, by server errno. */
export const errnoClasses: Readonly<Record<number, ErrorClass>> = Object.freeze({
  /** ER_NO_SUCH_TABLE */
  1146: { ...plain, code: "SCHEMA" },
  /** ER_BAD_FIELD_ERROR (unknown column) */
  1054: { ...plain, code: "SCHEMA" },
  /** ER_BAD_DB_ERROR (unknown database: the URL or pool names a database the server does not have) */
  1049: { ...plain, code: "UNKNOWN_DATABASE" },
  /** ER_ACCESS_DENIED_ERROR (wrong user or password) */
  1045: { ...plain, code: "AUTHENTICATION" },
  /** ER_DBACCESS_DENIED_ERROR (the user has no right to the database) */
  1044: { ...plain, code: "AUTHENTICATION" },
  /** ER_ACCESS_DENIED_NO_PASSWORD_ERROR (MySQL: a user that must log in another way) */
  1698: { ...plain, code: "AUTHENTICATION" },
  /** ER_BAD_TABLE_ERROR */
  1051: { ...plain, code: "SCHEMA" },
  /** ER_WRONG_VALUE_COUNT_ON_ROW (dead-letter table with other columns) */
  1136: { ...plain, code: "SCHEMA" },
  /** ER_BAD_NULL_ERROR (a NOT NULL constraint) */
  1048: { ...plain, code: "CONSTRAINT" },
  /** ER_DUP_ENTRY (a unique index) */
  1062: { ...plain, code: "CONSTRAINT" },
  /** ER_DUP_ENTRY_WITH_KEY_NAME */
  1586: { ...plain, code: "CONSTRAINT" },
  /** ER_ROW_IS_REFERENCED, ER_NO_REFERENCED_ROW (foreign keys, old errnos) */
  1216: { ...plain, code: "CONSTRAINT" },
  1217: { ...plain, code: "CONSTRAINT" },
  /** ER_ROW_IS_REFERENCED_2 (a foreign key from another table points at the row) */
  1451: { ...plain, code: "CONSTRAINT" },
  /** ER_NO_REFERENCED_ROW_2 (a foreign key names no row) */
  1452: { ...plain, code: "CONSTRAINT" },
  /** ER_CHECK_CONSTRAINT_VIOLATED (MySQL 8.0.16+) */
  3819: { ...plain, code: "CONSTRAINT" },
  /** ER_NET_PACKET_TOO_LARGE: the statement is over max_allowed_packet; the server closes the session. */
  1153: { ...plain, code: "INVALID_ARGUMENT", connectionLost: true },
  /** ER_WARN_ALLOWED_PACKET_OVERFLOWED (a value built past max_allowed_packet) */
  1301: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_TRUNCATED_WRONG_VALUE (an incorrect DATETIME, for example a runAt past the year 9999) */
  1292: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_DATA_OUT_OF_RANGE */
  1690: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_DATETIME_FUNCTION_OVERFLOW */
  1441: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_DATA_TOO_LONG */
  1406: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (for example a string that is not valid in the column's charset) */
  1366: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_WARN_DATA_OUT_OF_RANGE */
  1264: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_INVALID_JSON_TEXT (MySQL JSON column) */
  3140: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_CONSTRAINT_FAILED (MariaDB CHECK, e.g. json_valid on a JSON column) */
  4025: { ...plain, code: "INVALID_ARGUMENT" },
  /** ER_LOCK_DEADLOCK: the transaction was rolled back. */
  1213: { ...plain, code: "DEADLOCK", retryable: true },
  /** ER_LOCK_WAIT_TIMEOUT; MariaDB also raises it for a NOWAIT read of a locked row. */
  1205: { ...plain, code: "LOCK_TIMEOUT", retryable: true, lockNotAvailable: true },
  /** ER_LOCK_NOWAIT (MySQL 8) */
  3572: { ...plain, lockNotAvailable: true },
  /** ER_QUERY_INTERRUPTED / ER_CONNECTION_KILLED */
  1317: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
  1927: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
  /** ER_SERVER_SHUTDOWN */
  1053: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
  /** CR_SERVER_GONE_ERROR, CR_SERVER_LOST */
  2006: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
  2013: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
  /** ER_CON_COUNT_ERROR (too many connections) */
  1040: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
  /** ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8: idle session closed) */
  4031: { ...plain, code: "CONNECTION_LOST", connectionLost: true },
});

const lost: ErrorClass = Object.freeze({ ...plain, code: "CONNECTION_LOST", connectionLost: true });

const lostCodes = new Set([
  "PROTOCOL_CONNECTION_LOST",
  "ECONNRESET",
  "EPIPE",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR",
  "PROTOCOL_SEQUENCE_TIMEOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
]);

/** The codes of transient errors: one the driver made from a native error is treated as that error (retried). */
const transientCodes: ReadonlySet<BrokerErrorCode> = new Set(["DEADLOCK", "LOCK_TIMEOUT"]);

/** The core code a native error maps to (its {@link classifyError} class's), or `undefined`. */
export function codeForError(error: unknown): BrokerErrorCode | undefined {
  return classifyError(error).code;
}

/** How the driver treats `error`. */
export function classifyError(error: unknown): ErrorClass {
  if (BrokerError.is(error)) return transientCodes.has(error.code) ? classifyError(error.cause) : plain;
  if (typeof error !== "object" || error === null) return plain;
  const { errno, code, fatal, message } = error as Record<string, unknown>;
  const known = typeof errno === "number" ? errnoClasses[errno] : undefined;
  if (known !== undefined) return known;
  if ((typeof code === "string" && lostCodes.has(code)) || fatal === true) return lost;
  if (typeof message === "string" && /in closed state|connection lost|server has gone away/i.test(message))
    return lost;
  return plain;
}

/** Turns a native error into rowclaim's error where one fits (the native error as `cause`), else returns it as it is. */
export const normalizeError: (error: unknown, context: ErrorContext) => unknown =
  nativeErrorNormalizer<ErrorContext>({
    codeOf: codeForError,
    where: (context) => `Table "${context.table}" (${context.operation})`,
    sentences: {
      SCHEMA: (where, native) =>
        `${where}: the database refused a statement because a table or column is missing: ${native}. Create the table with the driver's schemaSql(), or add the column.`,
      CONSTRAINT: (where, native) =>
        `${where}: the database refused the write because it breaks a constraint: ${native}. Nothing was written.`,
      CONNECTION_LOST: (where, native) =>
        `${where}: the connection to the server was lost or refused (${native}). An open transaction was rolled back; check that the server is up, then retry.`,
      DEADLOCK: (where, native) =>
        `${where}: the server broke a deadlock with another transaction by rolling this one back (${native}). Nothing it did was kept; running it again may succeed.`,
      LOCK_TIMEOUT: (where, native) =>
        `${where}: a row lock wait ran past innodb_lock_wait_timeout (${native}); the statement failed. Running it again may succeed.`,
      AUTHENTICATION: (where, native) =>
        `${where}: the server refused the connection's user or password, or the user has no right to the database (${native}). Check the user and password in the connection URL (or your pool's settings), or GRANT the user access.`,
      UNKNOWN_DATABASE: (where, native) =>
        `${where}: the database the connection names does not exist on the server (${native}). Create it (CREATE DATABASE), or fix the database name in the connection URL (or your pool's settings).`,
      INVALID_ARGUMENT: (where, native) => `${where}: the database refused a value: ${native}.`,
    },
  });
