/**
 * The driver contract: what a database package implements so that the broker can claim,
 * settle and publish on it. Third parties write a driver with {@link defineDriver} and prove it
 * with `@rowclaim/conformance`.
 *
 * @module
 */
import type { ControlStore } from "./control-store.js";
import type { Claimer } from "./forms.js";
import type { Logger } from "./logger.js";
import type { OperationsDriver } from "./operations-driver.js";
import type { QueueStatusReader } from "./queue-status-reader.js";
import type { PublishRow, RowId } from "./rows.js";
import type { ScheduleLedger } from "./schedule-ledger.js";
import type { ClaimFormName, IsolationLevel, TableDefinition, TransactionMode } from "./table.js";
import type { PublishResult, UniquePublishRow } from "./unique.js";
import type { WakeListener } from "./wake-listener.js";

/** What a driver offers. The broker refuses a table the capabilities do not cover, before it touches the database. */
export interface DriverCapabilities {
  /** The claim forms the driver implements. */
  readonly forms: readonly ClaimFormName[];
  /** The forms in which the driver keeps FIFO groups in order. */
  readonly fifo: readonly ClaimFormName[];
  /** The isolation levels a table may name (PostgreSQL, MySQL). */
  readonly isolationLevels: readonly IsolationLevel[];
  /** The transaction modes a table may name (SQLite). */
  readonly transactionModes: readonly TransactionMode[];
  /**
   * Who sees an advisory key: `"database"` (every session of the server) or `"process"` (keys
   * kept in the process; two processes on one database do not see each other's keys).
   */
  readonly advisoryScope: "database" | "process";
  /**
   * Whether the driver keeps a per-key limit above 1 (`advisoryLock: { key, limit }`): lock
   * slots per rendered key, each tried without waiting (see `DRIVERS.md`). Default `false`: a
   * table with a limit above 1 is refused at subscribe with `UnsupportedFormError`.
   */
  readonly advisoryLimit: boolean;
  /** Whether a publish in one process can wake subscriptions in another ({@link Driver.listen}). */
  readonly crossProcessWake: boolean;
  /** Whether `publish(…, { client })` can insert inside the caller's own open transaction. */
  readonly transactionalPublish: boolean;
  /**
   * The forms in which handlers may call `delivery.transaction(body)`: the body's writes and the
   * settlement commit in one transaction (the claimer implements the form's optional
   * `transaction` method). Default: none. A subscription with `transactional: true` on a table
   * whose form is not listed is refused at subscribe with `UnsupportedFormError`.
   */
  readonly transactionalHandlers: readonly ClaimFormName[];
  /**
   * Whether the driver keeps run-time controls (pause, resume, rate limits) in the database: it
   * then exposes them as {@link Driver.controls}. Default false: the broker refuses them with
   * `UnsupportedControlError` (code `UNSUPPORTED_CONTROL`).
   */
  readonly controls: boolean;
  /**
   * Whether the driver keeps a schedule ledger ({@link Driver.scheduleLedger}), which
   * `broker.schedule` needs. Default false: `broker.schedule` is refused with `UnsupportedFormError`.
   */
  readonly schedules: boolean;
}

/** What the broker tells a driver when it opens a subscription's claimer. */
export interface OpenOptions {
  /** The group the subscription claims from (`null`: rows whose group is NULL, or a table without groups). */
  readonly group: string | null;
  /** Where to report warnings. */
  readonly logger: Logger;
  /**
   * How many handlers the subscription runs at once. A driver that can see its pool's size
   * refuses (or warns about) a pool too small for the form: row lock and advisory deliveries
   * each hold a connection. Absent when the caller did not say.
   */
  readonly workers?: number;
}

/** What the broker tells a driver when it publishes. */
export interface DriverPublishOptions {
  /**
   * The caller's own client, inside a transaction the caller opened: insert there and do not
   * commit. The driver documents which client types it takes.
   */
  readonly client?: unknown;
}

export type { WakeListener } from "./wake-listener.js";

/**
 * A startup probe: a check a driver runs against the live database, the first time a table
 * needs it, rather than trusting the server's version string.
 *
 * - `advisoryLock`: a session lock taken on one connection excludes another connection (fails
 *   behind a pooler in transaction mode, and where locks are no-ops). Advisory form.
 * - `skipLocked`: a row held `FOR UPDATE` by one connection is skipped by another's
 *   `SKIP LOCKED`. Row lock form.
 * - `listen`: a `LISTEN` still hears notifications after its session ran a transaction (fails
 *   behind a pooler in transaction mode). Cross-process wake-up; a failure means polling.
 * - `multiMaster`: the server is one node of a multi-master cluster (Galera), where row locks and
 *   advisory locks are local to the node. Row lock and advisory forms.
 */
export type ProbeName = "advisoryLock" | "skipLocked" | "listen" | "multiMaster";

/**
 * What a driver's probes found, by probe: `true` where the database keeps what the probe checks
 * (for `multiMaster`: the server is a cluster node), `false` where it does not; a probe not run
 * yet (or skipped) is absent.
 */
export type DetectedCapabilities = Readonly<Partial<Record<ProbeName, boolean>>>;

/** A database driver. */
export interface Driver {
  /** A name for people and logs, for example `"postgres"`. */
  readonly name: string;
  /** The SQL dialect, for example `"postgres"`, `"mysql"`, `"sqlite"`. */
  readonly dialect: string;
  /** What the driver offers. */
  readonly capabilities: DriverCapabilities;
  /**
   * Type only, never set: the client type transactional handler bodies receive
   * (`delivery.transaction(async (client) => …)`). A driver narrows it (`pg.PoolClient`, …) so
   * that a broker on it types `client`; left out, bodies receive `unknown`.
   */
  readonly "~transactionClient"?: unknown;
  /**
   * Opens a claimer for one subscription: reads the server version (refusing one below the
   * form's floor with `ServerTooOldError`), checks the table's columns (`SchemaError` naming the
   * table, the column and the statement) and builds the statements. The returned claimer's
   * `form` is the table's form.
   */
  open(table: TableDefinition, options: OpenOptions): Promise<Claimer>;
  /** Inserts rows and returns their ids, in order. */
  publish(
    table: TableDefinition,
    rows: readonly PublishRow[],
    options: DriverPublishOptions,
  ): Promise<readonly RowId[]>;
  /**
   * Optional (unique jobs, tables with a `key` column): inserts each row, in order, unless a
   * queued row holds its key; then keeps that row or replaces its payload, run time, priority
   * and headers, as the row's `onConflict` says. The database's unique index on the key column
   * decides (never a read before the insert); races between publishers (the holder claimed or
   * finished between insert and read, serialization failures, deadlocks, duplicate keys) are
   * retried inside, up to `UNIQUE_PUBLISH_ATTEMPTS`. A row with `key: null` is a plain insert.
   * Never waits for a handler: the claim has written NULL into the key of every row in work.
   */
  publishUnique?(
    table: TableDefinition,
    rows: readonly UniquePublishRow[],
    options: DriverPublishOptions,
  ): Promise<readonly PublishResult[]>;
  /** Listens for publishes made by other processes to `table`, calling `onWake` for each. Optional. */
  listen?(table: TableDefinition, onWake: () => void): Promise<WakeListener>;
  /**
   * What the driver's startup probes found so far (see {@link ProbeName}). Optional: a driver
   * without probes leaves it out.
   */
  detected?(): DetectedCapabilities;
  /**
   * The database server's clock now. Optional: the broker compares it with the host's clock for
   * lease tables (whose expiries the host computes) at subscribe and periodically, and warns or
   * refuses to claim when they differ by too much (`ClockSkewError`). A driver whose database
   * runs on the host's own clock (SQLite) leaves it out.
   */
  databaseTime?(): Promise<Date>;
  /**
   * Reads a table's counts and its rows in work, read-only, by the database's own means per form
   * (`readQueueStatus`, `listInWork`). Optional: without it, those refuse with `UNSUPPORTED_FORM`.
   */
  readonly queueStatus?: QueueStatusReader;
  /**
   * The control table (`src/control-store.ts`) where `capabilities.controls` is true. Optional:
   * a driver without it leaves it out and declares no `controls`.
   */
  readonly controls?: ControlStore;
  /**
   * The schedule ledger (`src/schedule-ledger.ts`): present where `capabilities.schedules` is
   * true, absent otherwise.
   */
  readonly scheduleLedger?: ScheduleLedger;
  /** The recommended `CREATE TABLE` and claim-order index for `table`, as SQL text. */
  schemaSql(table: TableDefinition): string;
  /**
   * The operations capability (cancel, remove, retry now, redrive, prune, row listing), as one
   * object: see `operations-driver.ts`. Optional: without it those operations fail with
   * `UNSUPPORTED_FORM`.
   */
  readonly operations?: OperationsDriver;
  /** Releases everything the driver holds: a pool it created is ended; a pool the user gave is left open. */
  close(): Promise<void>;
}

/** What {@link defineDriver} takes: a driver whose optional capabilities may be left out. */
export type DriverDefinition = Omit<Driver, "capabilities"> & {
  readonly capabilities: Pick<DriverCapabilities, "forms"> & Partial<DriverCapabilities>;
};

/**
 * Fills the optional capabilities with their defaults: no FIFO, no isolation levels or modes,
 * database-scoped keys, no cross-process wake, no transactional publish, no transactional handlers,
 * no run-time controls, no schedule ledger.
 * Class-based drivers call
 * this for their `capabilities`; object drivers use {@link defineDriver}.
 */
export function driverCapabilities(
  given: Pick<DriverCapabilities, "forms"> & Partial<DriverCapabilities>,
): DriverCapabilities {
  return Object.freeze({
    forms: Object.freeze([...given.forms]),
    fifo: Object.freeze([...(given.fifo ?? [])]),
    isolationLevels: Object.freeze([...(given.isolationLevels ?? [])]),
    transactionModes: Object.freeze([...(given.transactionModes ?? [])]),
    advisoryScope: given.advisoryScope ?? "database",
    advisoryLimit: given.advisoryLimit ?? false,
    crossProcessWake: given.crossProcessWake ?? false,
    transactionalPublish: given.transactionalPublish ?? false,
    transactionalHandlers: Object.freeze([...(given.transactionalHandlers ?? [])]),
    controls: given.controls ?? false,
    schedules: given.schedules ?? false,
  });
}

/**
 * Returns a driver object with its optional capabilities filled by {@link driverCapabilities},
 * so that a new optional capability in a later release is not a breaking change for third-party
 * drivers.
 *
 * @example
 * export const myDriver = defineDriver({
 *   name: "mydb", dialect: "mydb",
 *   capabilities: { forms: ["lease"] },
 *   open, publish, schemaSql, close,
 * });
 */
export function defineDriver<D extends DriverDefinition>(
  definition: D,
): Omit<D, "capabilities"> & { readonly capabilities: DriverCapabilities } {
  return { ...definition, capabilities: driverCapabilities(definition.capabilities) };
}
