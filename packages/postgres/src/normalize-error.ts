/**
 * Maps PostgreSQL's native errors onto rowclaim's stable codes by SQLSTATE, and tells a lost
 * connection (destroy the client) and a claim that lost a race (nothing to claim now).
 *
 * @module
 */
import { BrokerError, type BrokerErrorCode } from "@rowclaim/core";
import { type ErrorContext, nativeErrorNormalizer } from "@rowclaim/core/driver";

/** SQLSTATE (or SQLSTATE class, two characters) → rowclaim code. Exact states win over classes. */
export const sqlStateCodes: Readonly<Record<string, BrokerErrorCode>> = Object.freeze({
  "42P01": "SCHEMA", // undefined_table
  "42703": "SCHEMA", // undefined_column
  "3F000": "SCHEMA", // invalid_schema_name
  "42804": "SCHEMA", // datatype_mismatch
  "42883": "SCHEMA", // undefined_function (operator between mismatched column types)
  "42846": "SCHEMA", // cannot_coerce
  "42809": "SCHEMA", // wrong_object_type (the name is not a table)
  "42501": "SCHEMA", // insufficient_privilege
  "42601": "SCHEMA", // syntax_error
  "22P02": "INVALID_ARGUMENT", // invalid_text_representation
  "22P05": "INVALID_ARGUMENT", // untranslatable_character (\u0000 in jsonb)
  "22021": "INVALID_ARGUMENT", // character_not_in_repertoire
  "22001": "INVALID_ARGUMENT", // string_data_right_truncation
  "22003": "INVALID_ARGUMENT", // numeric_value_out_of_range
  "22007": "INVALID_ARGUMENT", // invalid_datetime_format
  "22008": "INVALID_ARGUMENT", // datetime_field_overflow
  "23": "CONSTRAINT", // integrity constraint violations (not null, unique, check, foreign key, exclusion)
  "0A000": "SCHEMA", // feature_not_supported (FOR UPDATE on a view, a cached plan whose columns changed)
  "28P01": "AUTHENTICATION", // invalid_password
  "28000": "AUTHENTICATION", // invalid_authorization_specification (no such role, no pg_hba.conf entry)
  "3D000": "UNKNOWN_DATABASE", // invalid_catalog_name (the database does not exist)
});

/** The SQLSTATE of a native error, if it has one. */
export function sqlStateOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The rowclaim code a native error maps to, or `undefined` when it maps to none (or it is a rowclaim error already). */
export function codeForError(error: unknown): BrokerErrorCode | undefined {
  if (BrokerError.is(error)) return undefined;
  if (isConnectionTimeout(error)) return "CONNECTION_TIMEOUT";
  if (isConnectionLost(error)) return "CONNECTION_LOST";
  const state = sqlStateOf(error);
  if (state === undefined) return undefined;
  return sqlStateCodes[state] ?? sqlStateCodes[state.slice(0, 2)];
}

const connectionStates = new Set(["57P01", "57P02", "57P03", "53300"]);
const socketCodes = new Set([
  "ECONNRESET",
  "EPIPE",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "ENOTCONN",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
]);

/** Whether the connection is gone: class 08, 57P01–57P03, a socket error, or `pg`'s "Connection terminated". */
export function isConnectionLost(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (code.startsWith("08") || connectionStates.has(code) || socketCodes.has(code)) return true;
  }
  const message = (error as { message?: unknown }).message;
  return (
    sqlStateOf(error) === undefined &&
    typeof message === "string" &&
    /connection terminated|not queryable|has been closed|connection error|server closed the connection/i.test(
      message,
    )
  );
}

/** Whether the error is pg-pool's own bounded wait running out (a user pool's `connectionTimeoutMillis`). */
export function isConnectionTimeout(error: unknown): boolean {
  if (typeof error !== "object" || error === null || sqlStateOf(error) !== undefined) return false;
  const message = (error as { message?: unknown }).message;
  return typeof message === "string" && /timeout exceeded when trying to connect/i.test(message);
}

/** Whether a claim merely lost a race (40001, 40P01, 55P03): it claims again at the next poll. */
export function isClaimConflict(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === "40001" || state === "40P01" || state === "55P03";
}

/** Wraps a native error in the rowclaim error its SQLSTATE maps to (`cause` kept; core's `nativeErrorNormalizer`). */
export const normalizeError: (error: unknown, context: ErrorContext) => unknown =
  nativeErrorNormalizer<ErrorContext>({
    codeOf: codeForError,
    where: (context) => `Table "${context.table}" (${context.operation})`,
    columnOf: (error, native) => {
      const column = (error as { column?: unknown }).column;
      return typeof column === "string" ? column : columnFromMessage(native);
    },
    sentences: {
      SCHEMA: (where, native) =>
        `${where}: PostgreSQL refused the statement: ${native}. Check the table and its columns against the description (driver.schemaSql(table) prints the recommended schema).`,
      CONSTRAINT: (where, native, error) =>
        `${where}: PostgreSQL refused the write because it breaks a constraint${constraintName(error)}: ${native}. Nothing was written.`,
      CONNECTION_LOST: (where, native) =>
        `${where}: the connection to PostgreSQL was lost or refused (${native}). Nothing this statement did was committed; check that the server is up, then retry.`,
      CONNECTION_TIMEOUT: (where, native) =>
        `${where}: no connection could be had from the pool in time (${native}). Make the pool larger or run fewer workers.`,
      AUTHENTICATION: (where, native) =>
        `${where}: PostgreSQL refused the connection's user or password (${native}). Check the user and password in the connection URL (or your pool's settings), and that the role exists and may log in.`,
      UNKNOWN_DATABASE: (where, native) =>
        `${where}: the database the connection names does not exist on the server (${native}). Create it (CREATE DATABASE), or fix the database name in the connection URL (or your pool's settings).`,
      INVALID_ARGUMENT: (where, native) =>
        `${where}: PostgreSQL refused a value: ${native}. Publish values the column types hold.`,
    },
  });

/** ` ("name")` for an error that names its constraint, else empty. */
function constraintName(error: unknown): string {
  const name = (error as { constraint?: unknown }).constraint;
  return typeof name === "string" && name !== "" ? ` "${name}"` : "";
}

/** The column a PostgreSQL message names (`column "x" … does not exist`), if any. */
export function columnFromMessage(message: string): string | undefined {
  const match = /column "((?:[^"]|"")+)"/.exec(message) ?? /column ([^\s]+) does not exist/.exec(message);
  if (match?.[1] === undefined) return undefined;
  const name = match[1].replaceAll('""', '"');
  const dot = name.lastIndexOf(".");
  return dot === -1 ? name : name.slice(dot + 1);
}
