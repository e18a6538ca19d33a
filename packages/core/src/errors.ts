/**
 * Errors raised by rowclaim. Every error is a {@link BrokerError} with a stable literal `code`;
 * test and branch on the code (or the subclass), never on the message, which is written for
 * people and names the table, the claim form and what to change.
 *
 * @module
 */

/** Every stable error code rowclaim raises. */
export type BrokerErrorCode =
  | "LEASE_LOST"
  | "SERVER_TOO_OLD"
  | "SCHEMA"
  | "DECLARATION"
  | "UNSUPPORTED_FORM"
  | "CLOSED"
  | "BATCH_ROLLED_BACK"
  | "INVALID_ARGUMENT"
  | "CONSTRAINT"
  | "CONNECTION_LOST"
  | "CONNECTION_TIMEOUT"
  | "PROBE_FAILED"
  | "CLOCK_SKEW"
  | "DEADLOCK"
  | "LOCK_TIMEOUT"
  | "AUTHENTICATION"
  | "UNKNOWN_DATABASE"
  | "CLOSE_TIMEOUT"
  | "UNSUPPORTED_CONTROL"
  | "HANDLER_TIMEOUT";

const brand: unique symbol = Symbol.for("rowclaim.BrokerError") as never;

/** Options shared by every {@link BrokerError} constructor. */
export interface BrokerErrorOptions {
  /** The native error (driver, SQL) behind this one, if any. */
  readonly cause?: unknown;
  /** The table the error is about, if any. */
  readonly table?: string;
}

/**
 * The base of every rowclaim error. `code` is stable across releases; `cause` carries the
 * native error where one exists.
 *
 * Use {@link BrokerError.is} rather than `instanceof` to detect it: `is` checks a
 * `Symbol.for` brand, so it also recognises errors thrown by a second copy of `@rowclaim/core`
 * (for example one bundled inside a driver).
 */
export class BrokerError extends Error {
  /** The stable code of this error. */
  readonly code: BrokerErrorCode;
  /** The table the error is about, when there is one. */
  readonly table: string | undefined;
  /** @internal brand checked by {@link BrokerError.is}. */
  readonly [brand] = true;

  constructor(code: BrokerErrorCode, message: string, options: BrokerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "BrokerError";
    this.code = code;
    this.table = options.table;
  }

  /**
   * Whether `error` is a rowclaim error, optionally of one code. Works across duplicated
   * copies of `@rowclaim/core`.
   *
   * @example
   * if (BrokerError.is(err, "LEASE_LOST")) { ... }
   */
  static is<C extends BrokerErrorCode>(error: unknown, code?: C): error is BrokerError & { code: C } {
    if (typeof error !== "object" || error === null) return false;
    if ((error as { [brand]?: unknown })[brand] !== true) return false;
    return code === undefined || (error as BrokerError).code === code;
  }
}

/**
 * A lease settlement or extension found another claim's token in the row: the lease ran out
 * while the handler ran and the row was claimed again. The settlement changed nothing.
 *
 * The advisory lock form raises it too when a settlement finds its row gone or already finished
 * (deleted or settled by hand while the key was held): the claim on the row was lost, and a
 * settlement that changed nothing never reports success.
 */
export class LeaseLostError extends BrokerError {
  declare readonly code: "LEASE_LOST";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("LEASE_LOST", message, options);
    this.name = "LeaseLostError";
  }
}

/** The database server is older than the release the claim form needs. */
export class ServerTooOldError extends BrokerError {
  declare readonly code: "SERVER_TOO_OLD";
  /** The version string the server reported. */
  readonly serverVersion: string;
  /** The first release the driver accepts, as text. */
  readonly floor: string;
  constructor(message: string, details: { serverVersion: string; floor: string } & BrokerErrorOptions) {
    super("SERVER_TOO_OLD", message, details);
    this.name = "ServerTooOldError";
    this.serverVersion = details.serverVersion;
    this.floor = details.floor;
  }
}

/** The table in the database does not match its description (missing table or column). */
export class SchemaError extends BrokerError {
  declare readonly code: "SCHEMA";
  /** The column that is missing or wrong, when known. */
  readonly column: string | undefined;
  /** The statement that failed, when there is one. */
  readonly statement: string | undefined;
  constructor(
    message: string,
    details: { column?: string | undefined; statement?: string | undefined } & BrokerErrorOptions = {},
  ) {
    super("SCHEMA", message, details);
    this.name = "SchemaError";
    this.column = details.column;
    this.statement = details.statement;
  }
}

/** A table description, or the options of a subscription, cannot work. Nothing was changed. */
export class DeclarationError extends BrokerError {
  declare readonly code: "DECLARATION";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("DECLARATION", message, options);
    this.name = "DeclarationError";
  }
}

/** The driver does not offer the claim form (or the FIFO guard) the table selects. */
export class UnsupportedFormError extends BrokerError {
  declare readonly code: "UNSUPPORTED_FORM";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("UNSUPPORTED_FORM", message, options);
    this.name = "UnsupportedFormError";
  }
}

/** The broker (or the subscription) is closed, or closing: nothing more is claimed or settled. */
export class ClosedError extends BrokerError {
  declare readonly code: "CLOSED";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("CLOSED", message, options);
    this.name = "ClosedError";
  }
}

/**
 * An earlier settlement of the same row lock batch failed, and the batch's transaction was
 * rolled back: this row is due again and its settlement changed nothing.
 */
export class BatchRolledBackError extends BrokerError {
  declare readonly code: "BATCH_ROLLED_BACK";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("BATCH_ROLLED_BACK", message, options);
    this.name = "BatchRolledBackError";
  }
}

/** A value passed to publish or settle is not one the table can hold (for example a payload of the wrong type). */
export class InvalidArgumentError extends BrokerError {
  declare readonly code: "INVALID_ARGUMENT";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("INVALID_ARGUMENT", message, options);
    this.name = "InvalidArgumentError";
  }
}

/**
 * The database refused a write because it breaks a constraint of the table (unique, foreign
 * key, not null, check): for example a dead-letter move into a table whose unique index already
 * holds the row's value, or a publish whose extra column value is taken. Nothing was written.
 * `cause` holds the database's own error (SQLSTATE class 23, MySQL errno 1062/1451/1452/…,
 * `SQLITE_CONSTRAINT_*`).
 */
export class ConstraintError extends BrokerError {
  declare readonly code: "CONSTRAINT";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("CONSTRAINT", message, options);
    this.name = "ConstraintError";
  }
}

/**
 * The connection to the database was lost, refused or ended by the server (a shut-down or
 * restarting server, a killed session, a network failure). What the statement would have
 * changed is unknown only in the sense the database defines: an uncommitted transaction was
 * rolled back; a lease or advisory row returns once its lease runs out or its session ends.
 * Retrying later is safe. `cause` holds the client's own error.
 */
export class ConnectionLostError extends BrokerError {
  declare readonly code: "CONNECTION_LOST";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("CONNECTION_LOST", message, options);
    this.name = "ConnectionLostError";
  }
}

/**
 * No connection could be had within the driver's bounded wait: the pool was exhausted (every
 * connection held by deliveries in work, or by the application) or the server did not answer.
 * The message names the wait and the fix (a larger pool, fewer workers).
 */
export class ConnectionTimeoutError extends BrokerError {
  declare readonly code: "CONNECTION_TIMEOUT";
  /** How long the driver waited, in milliseconds. */
  readonly waitedMs: number;
  constructor(message: string, details: { waitedMs: number } & BrokerErrorOptions) {
    super("CONNECTION_TIMEOUT", message, details);
    this.name = "ConnectionTimeoutError";
    this.waitedMs = details.waitedMs;
  }
}

/**
 * A startup probe found that the database (or what stands between it and the driver: a
 * pooler in transaction mode, a multi-master cluster) does not keep what the table's claim form
 * relies on; the subscription was refused before it claimed anything. `probe` names the check
 * that failed; the message names the fix (a direct or session-mode URL, another form).
 */
export class UnsafeTopologyError extends BrokerError {
  declare readonly code: "PROBE_FAILED";
  /** The probe that failed, for example `"advisoryLock"`. */
  readonly probe: string;
  constructor(message: string, details: { probe: string } & BrokerErrorOptions) {
    super("PROBE_FAILED", message, details);
    this.name = "UnsafeTopologyError";
    this.probe = details.probe;
  }
}

/**
 * The host's clock and the database's differ by more than a lease table can bear (see
 * `ClockSkewOptions`): the lease form's expiries are computed on the host, so a host whose clock
 * runs ahead takes leases that are still live. Nothing was claimed.
 */
export class ClockSkewError extends BrokerError {
  declare readonly code: "CLOCK_SKEW";
  /** The host clock minus the database clock, in milliseconds (positive: the host runs ahead). */
  readonly skewMs: number;
  /** The host's name. */
  readonly host: string;
  /** The table's lease, in seconds. */
  readonly leaseSeconds: number;
  constructor(
    message: string,
    details: { skewMs: number; host: string; leaseSeconds: number } & BrokerErrorOptions,
  ) {
    super("CLOCK_SKEW", message, details);
    this.name = "ClockSkewError";
    this.skewMs = details.skewMs;
    this.host = details.host;
    this.leaseSeconds = details.leaseSeconds;
  }
}

/**
 * Transient: the database found the statement's transaction in a deadlock with another and
 * rolled it back (MySQL/MariaDB errno 1213). What the transaction did is undone (a row lock
 * batch's rows are due again, no attempt spent); running it again may succeed. Claims retry it
 * themselves (bounded); a settlement that fails with it fails its delivery.
 */
export class DeadlockError extends BrokerError {
  declare readonly code: "DEADLOCK";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("DEADLOCK", message, options);
    this.name = "DeadlockError";
  }
}

/**
 * Transient: the statement waited for a row another transaction holds longer than the
 * database's lock wait allows (MySQL/MariaDB errno 1205, `innodb_lock_wait_timeout`), and failed;
 * running it again may succeed. Claims retry it themselves (bounded).
 */
export class LockTimeoutError extends BrokerError {
  declare readonly code: "LOCK_TIMEOUT";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("LOCK_TIMEOUT", message, options);
    this.name = "LockTimeoutError";
  }
}

/**
 * The database server refused the connection's credentials: a wrong user name or password, or a
 * user without the right to the database (PostgreSQL 28P01, 28000; MySQL 1044, 1045, 1698).
 * Retrying does not help; the message names the fix (the user and password in the connection URL
 * or the pool's settings, or a `GRANT`). `cause` holds the client's own error.
 */
export class AuthenticationError extends BrokerError {
  declare readonly code: "AUTHENTICATION";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("AUTHENTICATION", message, options);
    this.name = "AuthenticationError";
  }
}

/**
 * The database the connection names does not exist on the server (PostgreSQL 3D000, MySQL 1049):
 * the connection URL (or the pool's `database`) names another database than the one created.
 * Retrying does not help; create the database or fix its name. `cause` holds the client's own error.
 */
export class UnknownDatabaseError extends BrokerError {
  declare readonly code: "UNKNOWN_DATABASE";
  constructor(message: string, options?: BrokerErrorOptions) {
    super("UNKNOWN_DATABASE", message, options);
    this.name = "UnknownDatabaseError";
  }
}

/**
 * `broker.close({ timeout })` returned at its time limit with something still open: it is not
 * thrown (a shut-down path goes on), but logged as a warning with this error in `err`. `pending`
 * names what was still closing (for example the driver's pool, which ends only once every
 * connection checked out of it, your own code's included, is returned).
 */
export class CloseTimeoutError extends BrokerError {
  declare readonly code: "CLOSE_TIMEOUT";
  /** What was still closing when the time ran out. */
  readonly pending: string;
  /** The time `close` was given, in milliseconds (its `timeout` and the grace for releasing locks). */
  readonly waitedMs: number;
  constructor(message: string, details: { pending: string; waitedMs: number } & BrokerErrorOptions) {
    super("CLOSE_TIMEOUT", message, details);
    this.name = "CloseTimeoutError";
    this.pending = details.pending;
    this.waitedMs = details.waitedMs;
  }
}

/**
 * A handler ran past the subscription's `timeout`: the delivery's `signal` aborted with this
 * error, and once `timeoutGrace` also ran out without a settlement the row was settled as a
 * failed attempt (retried with backoff, or dead-lettered at `maxAttempts`). What the handler
 * returns later changes nothing.
 */
export class HandlerTimeoutError extends BrokerError {
  declare readonly code: "HANDLER_TIMEOUT";
  /** The timeout the handler ran past, in milliseconds. */
  readonly timeoutMs: number;
  constructor(message: string, details: { timeoutMs: number } & BrokerErrorOptions) {
    super("HANDLER_TIMEOUT", message, details);
    this.name = "HandlerTimeoutError";
    this.timeoutMs = details.timeoutMs;
  }
}

/**
 * Where a native error happened, as a driver's `normalizeError(error, context)` takes it to word
 * the rowclaim error that wraps it. One meaning on every driver: `operation` is what the driver
 * was doing, for people (`"lease claim"`, `"publish"`); `statement` is the SQL text that failed,
 * when there is one (it becomes {@link SchemaError.statement}).
 */
export interface ErrorContext {
  /** The table the driver was working on. */
  readonly table: string;
  /** What the driver was doing, for people: `"lease claim"`, `"row lock commit"`, `"publish"`. */
  readonly operation: string;
  /** The SQL text that failed, when there is one. */
  readonly statement?: string | undefined;
}
