/**
 * The option types of the broker (`createBroker`, `subscribe`, `publish`, `publishMany`), apart
 * from the broker itself so that the modules that check them import no runtime.
 *
 * @module
 */
import type { BackoffOptions } from "./backoff.js";
import type { ClockSkewOptions } from "./clock-skew.js";
import type { RateLimitOptions } from "./controls.js";
import type { Driver } from "./driver.js";
import type { AnyLogger, Logger } from "./logger.js";
import type { Headers } from "./rows.js";
import type { HandleSignalsOption } from "./signals.js";
import type { StartupRetryOptions } from "./startup-retry.js";
import type { DeadLetterTarget, ExtraColumnsOf, HeadersOf, PublishPayloadOf } from "./table.js";
import type { Instrumentation } from "./telemetry.js";
import type { UniqueOptions } from "./unique.js";

/** How a broker is made. */
export interface BrokerOptions {
  /** The database driver. The broker closes it on {@link Broker.close}. */
  readonly driver: Driver;
  /**
   * Where warnings, background failures and (at debug level) claim and settlement traces go:
   * a rowclaim {@link Logger} (message first, like `console`) or a pino-style logger (object
   * first; pino and bunyan are passed as they are). Every logged error is in the `err` field.
   * Default: the console (warnings and errors only).
   */
  readonly logger?: AnyLogger;
  /**
   * Spans and metrics: `otelInstrumentation()` from `@rowclaim/core/otel` (needs
   * `@opentelemetry/api`), or any {@link Instrumentation}. Default: none, at no cost.
   */
  readonly instrumentation?: Instrumentation;
  /**
   * Close the broker on SIGTERM and SIGINT (`true`), or on the signals listed: deliveries in
   * work settle (up to `close`'s default timeout), locks are released, then the signal takes
   * its default course (the process ends) unless something else listens to it. Default `false`.
   */
  readonly handleSignals?: HandleSignalsOption;
  /**
   * The host's clock, from which lease claims and expiries are computed. Default
   * `() => new Date()`; tests give a skewed one.
   */
  readonly clock?: () => Date;
  /**
   * The clock-skew check of lease tables (`src/clock-skew.ts`), on drivers that read the
   * database's clock (`Driver.databaseTime`): warn beyond a tenth of the lease, refuse to claim
   * beyond a quarter (`ClockSkewError`, code `CLOCK_SKEW`), measure again every minute. `false`
   * turns it off.
   */
  readonly clockSkew?: ClockSkewOptions | false;
  /**
   * How `subscribe` meets a database that does not answer yet (a container started before it,
   * a restart, a failover): a start-up that fails with `CONNECTION_LOST` is tried again, with
   * backoff (250 ms doubling up to 4 s), for up to `timeout` ms (default 30,000); then the last
   * `CONNECTION_LOST` is thrown. The first failure is logged as a warning. Every other start-up
   * failure (`SCHEMA`, `SERVER_TOO_OLD`, `PROBE_FAILED`, `CONNECTION_TIMEOUT`, …) fails at once.
   * `false` (or `timeout: 0`) fails at once on `CONNECTION_LOST` too.
   */
  readonly startupRetry?: StartupRetryOptions | false;
}

/** The options of {@link Broker.subscribe}. */
export interface SubscribeOptions {
  /** The group to claim from. Default: rows whose group is NULL (every row, on a table without groups). */
  readonly group?: string | null;
  /**
   * How many handlers run in parallel. Default 1. An acking handler's slot is free once its
   * settlement is sent (it returned, called `delivery.settle`, or its transaction body
   * returned): the next row starts, and the next claim runs, while the ack commits. A handler
   * that goes on after its `settle` call no longer counts. A retry or a dead letter frees the
   * slot once its row is given back, so the next claim sees the row in its place.
   */
  readonly workers?: number;
  /**
   * How many rows one claim takes at most. Defaults: with `prefetch`, `workers + prefetch` in
   * the lease and row lock forms (a claim fills every free worker and the free room held ahead);
   * otherwise `workers` in the lease and advisory lock forms (a claim fills every free worker;
   * each row still settles on its own) and 1 in the row lock form (a row lock batch shares one
   * transaction, which commits once every row of the batch has settled). A claim never takes
   * more rows than there is room for: `batch` larger than `workers + prefetch` (`workers` in the
   * advisory lock form) is refused with a `DeclarationError`. While claims come back full and a
   * claim leaves room (the row lock form's one-row claims), the subscription runs the next claim
   * beside it, so free workers never wait for a claim's round trip. See the core README's
   * "Throughput" section for what each form's default costs after a crash.
   */
  readonly batch?: number;
  /**
   * The throughput option: how many rows to hold claimed ahead of the workers, each waiting for
   * a free worker, so that a finished handler starts the next row without a claim's round trip
   * and claims take many rows at once. Default 0. Rows held ahead are held as the form holds
   * rows in work: the lease form extends their leases; the row lock form keeps them locked in
   * the batch's open transaction, which commits once its last row settled (so a batch holds its
   * transaction, and every row it settled, for as long as its slowest handler, and a crash rolls
   * the whole batch back). They are bounded (`workers + prefetch` rows held at most), and a
   * crash brings them back as it brings back rows in work: after the lease runs out, or at once
   * when the row lock transaction's connection dies. On `stop()` rows whose handlers have not
   * started are given back at once, unhandled (a lease row keeps the attempt its claim counted).
   * In the lease form a claim takes at most half of `workers + prefetch` (two claims overlap), and
   * with several workers on a busy queue waits until that much room less one row per worker is
   * free, so that claims stay large while the workers run the rows held ahead.
   * The advisory lock form refuses it (`DeclarationError`): each row it holds holds a connection.
   */
  readonly prefetch?: number;
  /** How long to wait between claims that found nothing, in milliseconds. Default 1000. */
  readonly pollInterval?: number;
  /** Overrides the table's `maxAttempts` (set it with `deadLetter`). */
  readonly maxAttempts?: number;
  /** Overrides the table's `deadLetter` (set it with `maxAttempts`). */
  readonly deadLetter?: DeadLetterTarget;
  /** The delay after a handler throws. Default: 1 s doubling up to 1 h. */
  readonly backoff?: BackoffOptions;
  /** Lease form: extend every lease in work each half lease. Default true. */
  readonly extendLeases?: boolean;
  /** Listen for publishes from other processes where the driver can (`Driver.listen`). Default true. */
  readonly listen?: boolean;
  /**
   * The handler settles through `delivery.transaction(body)` (its writes commit with the
   * settlement): refuse the subscription at once, with `UnsupportedFormError`, when the driver
   * offers no transactional handlers in the table's form (`capabilities.transactionalHandlers`).
   * Default false: `delivery.transaction` is still there, and fails when called on such a driver.
   */
  readonly transactional?: boolean;
  /**
   * At most `limit` rows claimed per `intervalMs`, across every process, counted in the
   * database (`src/controls.ts`): one statement before each claim, one more after a claim that
   * took fewer rows than it was given. Needs a driver with `capabilities.controls` (else
   * `UnsupportedControlError`). Default: no limit.
   */
  readonly rateLimit?: RateLimitOptions;
  /**
   * Milliseconds a handler may run: then the delivery's `signal` aborts with a
   * `HandlerTimeoutError` (code `HANDLER_TIMEOUT`), and a handler that has not settled within
   * `timeoutGrace` more has its row settled as a failed attempt (retried with backoff, or
   * dead-lettered at `maxAttempts`); what it returns later is ignored. A transactional body still
   * running then is given up (row lock: the batch rolls back; lease: its session ends; advisory:
   * the key is unlocked), its connection returned. Default: no timeout.
   */
  readonly timeout?: number;
  /** Milliseconds between `timeout` and the broker settling the row itself. Default 5000. */
  readonly timeoutGrace?: number;
  /**
   * A per-row override of `timeout`: one of the table's `extraColumns` holding a row's own timeout
   * in milliseconds (a whole number; NULL or absent: the subscription's `timeout`, if any). Set
   * it with `publish(…, { values: { [column]: ms } })`. It costs nothing more: the claim reads
   * the extra columns already. A value that is not a whole number from 1 to 2147483647 is
   * ignored with a warning. Default: none.
   */
  readonly timeoutColumn?: string;
}

/**
 * The options of {@link Broker.publish}.
 *
 * @typeParam Head the table's headers type.
 * @typeParam Extra the table's extra column names, the only keys `values` may name.
 */
export interface PublishOptions<Head = Headers, Extra extends string = string> {
  /** The row's group. Needs a group column. */
  readonly group?: string | null;
  /** When the row is due. Needs a runAt column. Default: now. */
  readonly runAt?: Date;
  /** The row's priority (smaller goes first). Needs a priority column. */
  readonly priority?: number;
  /** Headers carried beside the payload. Needs a headers column. */
  readonly headers?: Head;
  /** Values for the table's `extraColumns` (for example the columns an advisory key names). */
  readonly values?: ValuesFor<Extra>;
}

/** What `values` takes: a value for each extra column it names; nothing on a table without extra columns. */
export type ValuesFor<Extra extends string> = [Extra] extends [never]
  ? { readonly [column: string]: never }
  : { readonly [Column in Extra]?: unknown };

/** One message of {@link Broker.publishMany}. */
export interface PublishMessage<Payload = unknown, Head = Headers, Extra extends string = string>
  extends PublishOptions<Head, Extra> {
  /** The message body. */
  readonly payload: Payload;
}

/** The options of {@link Broker.publish} for one table, typed by the table. */
export type PublishOptionsFor<Table> = PublishOptions<HeadersOf<Table>, ExtraColumnsOf<Table>> &
  PublishTarget;

/** One message of {@link Broker.publishMany} for one table, typed by the table. */
export type PublishMessageFor<Table> = PublishMessage<
  PublishPayloadOf<Table>,
  HeadersOf<Table>,
  ExtraColumnsOf<Table>
>;

/** Where a publish runs. */
export interface PublishTarget {
  /**
   * The caller's own client inside a transaction it opened: the row exists only if that
   * transaction commits. Which client types a driver takes is in its README.
   */
  readonly client?: unknown;
}

/** The options of a unique {@link Broker.publish} for one table, typed by the table: the publish options with a `key`. */
export type UniquePublishOptionsFor<Table> = PublishOptionsFor<Table> & UniqueOptions;

/** One message of a unique {@link Broker.publishMany} for one table, typed by the table: a message with a `key`. */
export type UniquePublishMessageFor<Table> = PublishMessageFor<Table> & UniqueOptions;
