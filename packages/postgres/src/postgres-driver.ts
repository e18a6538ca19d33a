/**
 * `createPostgresDriverOn`: the rowclaim driver for PostgreSQL on any pool shaped like
 * {@link PoolLike} (`createPostgresDriver` is it on `pg`; this module loads no client).
 *
 * @module
 */
import {
  type Driver,
  InvalidArgumentError,
  type PublishResult,
  type RowId,
  type TableDefinition,
} from "@rowclaim/core";
import {
  acquireTimeoutOf,
  type Claimer,
  type ControlStore,
  type DetectedCapabilities,
  DriverLifecycle,
  type DriverPublishOptions,
  driverCapabilities,
  formLabels,
  type OpenOptions,
  type OptionKeySet,
  type ProbeName,
  type PublishRow,
  refuseUniquePublishClient,
  type UniquePublishRow,
  type WakeListener,
} from "@rowclaim/core/driver";
import { PostgresAdvisoryClaimer } from "./advisory.js";
import { BoundedPool, poolMax } from "./bounded-pool.js";
import { HeldConnection } from "./connection.js";
import { PostgresControlStore } from "./controls.js";
import { PostgresLeaseClaimer } from "./lease.js";
import { ChannelListener, channelFor } from "./listen.js";
import { normalizeError } from "./normalize-error.js";
import { postgresOperations } from "./operations.js";
import type { PoolLike } from "./pool-like.js";
import { PostgresProbes } from "./probe.js";
import { Publisher } from "./publish.js";
import { postgresStatusReader } from "./queue-status.js";
import { PostgresRowLockClaimer } from "./row-lock.js";
import { postgresScheduleLedger } from "./schedule-ledger.js";
import { assertNamesUsable, checkColumns, checkStatements } from "./schema-check.js";
import { present, Settlements } from "./settle.js";
import {
  advisoryCandidatesSql,
  advisorySettleAndUnlockSql,
  advisoryTakeSql,
  type ColumnTypes,
  leaseClaimSql,
  leaseClaimWithAcksSql,
  leaseExtendSql,
  leaseSettleManySql,
  rowLockClaimSql,
  rowLockSettleManySql,
  type Statement,
  schemaSql,
  serverVersionSql,
  settleStatements,
} from "./sql.js";
import { checkUniqueIndex } from "./unique-check.js";
import { UniquePublisher } from "./unique-publish.js";
import { assertServerVersion, parseServerVersionNum, versionNumFromText } from "./version.js";

/** The options of a PostgreSQL driver that do not depend on its client (see {@link createPostgresDriverOn}). */
export interface PostgresExecutorOptions {
  /**
   * Wake subscriptions in other processes with LISTEN/NOTIFY: publishes send `pg_notify`, and every
   * subscription holds one more connection LISTENing. Default `false` (they poll).
   */
  readonly notify?: boolean;
  /**
   * With `notify: true`, subscriptions also hear pauses and resumes from other processes at once:
   * one more LISTEN connection per table whose pauses they follow. Default `false`.
   */
  readonly watchControls?: boolean;
  /** Takes the server for this version (`"10.23"`) instead of reading it, for tests of the version floor. */
  readonly assumeServerVersion?: string;
  /** How long a wait for a connection from the pool may last before `CONNECTION_TIMEOUT`, in ms. Default 30,000. */
  readonly acquireTimeoutMs?: number;
  /** Startup probes to skip (`"advisoryLock"`, `"skipLocked"`, `"listen"`; README, "Where it runs"). Default: none. */
  readonly skipProbes?: readonly ProbeName[];
}

/** The keys of {@link PostgresExecutorOptions}, for a maker's check of unknown options (checked against the type when it compiles). */
export const executorOptionKeys: readonly string[] = Object.freeze(
  Object.keys({
    notify: true,
    watchControls: true,
    assumeServerVersion: true,
    acquireTimeoutMs: true,
    skipProbes: true,
  } satisfies OptionKeySet<PostgresExecutorOptions>),
);

/** Who made a driver of {@link createPostgresDriverOn}, for its `name` and its messages. */
export interface ExecutorDriverMaker {
  /** The driver's `name` (`"postgres"`, `"postgres-js"`). */
  readonly name: string;
  /** The factory as messages name it (`"createPostgresDriver()"`). */
  readonly caller: string;
  /** Run last by `close()`: ends what the maker opened for the driver (its own pool). */
  readonly end?: () => Promise<void>;
}

/** A PostgreSQL driver on any client (see {@link createPostgresDriverOn}): its `dialect` is `"postgres"`. */
export interface PostgresExecutorDriver extends Driver {
  readonly dialect: "postgres";
  /** The pool the driver runs on (its own with `url`, else yours); for your own queries pass a `pg.Pool` as `{ pool }`. */
  readonly pool: PoolLike;
  /** Pauses and rate counters in `rowclaim_controls` (`src/controls.ts`). */
  readonly controls: ControlStore;
  /** The NOTIFY channel of a table (what {@link PostgresExecutorDriver.listen} LISTENs on). */
  channelFor(table: TableDefinition): string;
  /** What the driver's startup probes found so far (`src/probe.ts`). */
  detected(): DetectedCapabilities;
  /** The server's clock (`clock_timestamp()`), for the broker's clock-skew check of lease tables. */
  databaseTime(): Promise<Date>;
}

/**
 * Refuses client-independent options a driver cannot work with; a maker runs it before it opens a pool.
 *
 * @throws {InvalidArgumentError} naming the option and what it takes.
 */
export function checkExecutorOptions(options: PostgresExecutorOptions, caller: string): void {
  const watchControls: unknown = options.watchControls;
  if (watchControls !== undefined && typeof watchControls !== "boolean")
    throw new InvalidArgumentError(
      `${caller}: watchControls must be true or false, got ${typeof watchControls}.`,
    );
  if (watchControls === true && options.notify !== true)
    throw new InvalidArgumentError(
      `${caller}: watchControls needs notify: true (pauses are heard through LISTEN/NOTIFY).`,
    );
  acquireTimeoutOf(caller, options.acquireTimeoutMs);
}

/**
 * Creates a PostgreSQL driver on `pool`, any client's pool shaped like {@link PoolLike}. The driver
 * never ends `pool`; `close()` runs `maker.end` last.
 */
export function createPostgresDriverOn(
  pool: PoolLike,
  options: PostgresExecutorOptions,
  maker: ExecutorDriverMaker,
): PostgresExecutorDriver {
  checkExecutorOptions(options, maker.caller);
  const notify = options.notify === true;
  const listeners = new Set<WakeListener>();
  const boundedPool = new BoundedPool(pool, acquireTimeoutOf(maker.caller, options.acquireTimeoutMs));
  const probes = new PostgresProbes(boundedPool, options.skipProbes);
  const statementPool = probes.pool;
  const publisher = new Publisher(statementPool, notify ? channelFor : null);
  const controls = new PostgresControlStore(
    boundedPool,
    notify && options.watchControls === true ? boundedPool : undefined,
  );
  const uniquePublisher = new UniquePublisher(statementPool, notify ? channelFor : null);
  let serverVersion: Promise<{ num: number; text: string }> | undefined;
  const lifecycle = new DriverLifecycle("PostgreSQL");

  const assumed = options.assumeServerVersion;
  if (assumed !== undefined)
    serverVersion = Promise.resolve({ num: versionNumFromText(assumed), text: assumed });

  const readVersion = async (connection: HeldConnection): Promise<{ num: number; text: string }> => {
    serverVersion ??= connection.text(serverVersionSql).then(
      (result) => {
        const row = result.rows[0] ?? {};
        return { num: parseServerVersionNum(row.version_num), text: String(row.version) };
      },
      (error: unknown) => {
        serverVersion = undefined;
        throw error;
      },
    );
    return serverVersion;
  };

  const openChecked = async (table: TableDefinition, openOptions: OpenOptions): Promise<Claimer> => {
    assertNamesUsable(table);
    const group = openOptions.group;
    // Behind a transaction pooler the checks below must share one server session: one transaction.
    const pinned = await probes.sessionPinned();
    const connection = await HeldConnection.acquire(statementPool);
    if (!pinned) await connection.text("BEGIN");
    try {
      const version = await readVersion(connection);
      assertServerVersion(table, version.num, version.text);
      const claimPurpose = `${table.form === "rowLock" ? "row lock" : table.form === "lease" ? "lease" : "advisory"} claim`;
      const keyColumns = (table.advisoryKey?.parts ?? []).flatMap((part) =>
        "column" in part ? [part.column] : [],
      );
      const types: ColumnTypes = await checkColumns(
        connection,
        table,
        [...new Set([...table.allColumns, ...keyColumns])],
        claimPurpose,
      );
      await checkUniqueIndex(connection, table);
      const deadLetterTable =
        table.deadLetter !== undefined && "table" in table.deadLetter ? table.deadLetter.table : undefined;
      if (deadLetterTable !== undefined) {
        const { id, lockedUntil } = table.columns;
        const copied = table.allColumns.filter((column) => column !== id && column !== lockedUntil);
        const purpose = `moveToTable settlement (to "${deadLetterTable}")`;
        await checkColumns(connection, table, copied, purpose, deadLetterTable);
      }
      const settlements = new Settlements(settleStatements(table, table.form));
      const checks: Statement[] = settlements.known(deadLetterTable);
      const base = { pool: statementPool, table, group, settlements };
      let claimer: Claimer;
      switch (table.form) {
        case "rowLock": {
          const claim = rowLockClaimSql(table, group, types);
          const settleMany = rowLockSettleManySql(table);
          checks.unshift(claim.general, ...present(settleMany.delete, settleMany.markProcessed));
          claimer = new PostgresRowLockClaimer({ ...base, claim, settleMany });
          break;
        }
        case "lease": {
          const claim = leaseClaimSql(table, group, types);
          const extend = leaseExtendSql(table, types);
          const settleMany = leaseSettleManySql(table, types);
          const claimWithAcks = leaseClaimWithAcksSql(table, group, types);
          const claimWithOneAck = leaseClaimWithAcksSql(table, group, types, "one");
          checks.unshift(
            claim.general,
            extend,
            ...present(settleMany.delete, settleMany.markProcessed),
            ...(table.fifo || table.isolation !== undefined
              ? []
              : [claimWithAcks, claimWithOneAck].flatMap((carried) =>
                  present(carried.delete.general, carried.markProcessed?.general ?? null),
                )),
          );
          claimer = new PostgresLeaseClaimer({
            ...base,
            claim,
            extend,
            settleMany,
            claimWithAcks,
            claimWithOneAck,
          });
          break;
        }
        case "advisory": {
          const candidates = advisoryCandidatesSql(table, group, types, "anySession");
          const candidatesHere = advisoryCandidatesSql(table, group, types, "listed");
          const take = advisoryTakeSql(table, group, types);
          const settleAndUnlock = advisorySettleAndUnlockSql(table);
          checks.unshift(
            candidates.general,
            candidatesHere.general,
            take,
            ...present(...Object.values(settleAndUnlock)),
          );
          const { logger } = openOptions;
          claimer = new PostgresAdvisoryClaimer({
            ...base,
            candidates,
            candidatesHere,
            take,
            settleAndUnlock,
            logger,
          });
          break;
        }
      }
      await checkStatements(connection, table, checks);
      return claimer;
    } finally {
      if (!pinned) await connection.text("ROLLBACK").catch(() => undefined);
      connection.release();
    }
  };

  // The startup probes run once the table is known to be there (`src/probe.ts`).
  const open = async (table: TableDefinition, openOptions: OpenOptions): Promise<Claimer> => {
    const claimer = await openChecked(table, openOptions);
    try {
      await probes.check(table);
    } catch (error) {
      await claimer.close().catch(() => undefined);
      throw error;
    }
    return claimer;
  };

  const driver: PostgresExecutorDriver = {
    name: maker.name,
    dialect: "postgres",
    capabilities: driverCapabilities({
      forms: ["rowLock", "lease", "advisory"],
      fifo: ["rowLock", "lease"],
      isolationLevels: ["read uncommitted", "read committed", "repeatable read", "serializable"],
      advisoryScope: "database",
      advisoryLimit: true,
      crossProcessWake: notify,
      transactionalPublish: true,
      transactionalHandlers: ["rowLock", "lease", "advisory"],
      controls: true,
      schedules: true,
    }),
    controls,
    scheduleLedger: postgresScheduleLedger(statementPool, publisher),
    pool,
    channelFor,
    detected: () => probes.detected(),
    databaseTime: () => probes.databaseTime(),
    queueStatus: postgresStatusReader(statementPool),
    open: (table, openOptions) =>
      lifecycle.open(
        table,
        openOptions,
        poolMax(pool),
        () => open(table, openOptions),
        (error) =>
          normalizeError(error, {
            table: table.name,
            operation: `${formLabels[table.form]} subscription startup`,
          }),
      ),
    async publish(
      table: TableDefinition,
      rows: readonly PublishRow[],
      publishOptions: DriverPublishOptions,
    ): Promise<readonly RowId[]> {
      lifecycle.assertOpen(table);
      return publisher.publish(table, rows, publishOptions.client);
    },
    async publishUnique(
      table: TableDefinition,
      rows: readonly UniquePublishRow[],
      publishOptions: DriverPublishOptions,
    ): Promise<readonly PublishResult[]> {
      lifecycle.assertOpen(table);
      refuseUniquePublishClient(table, publishOptions);
      return uniquePublisher.publish(table, rows);
    },
    schemaSql,
    operations: postgresOperations(statementPool),
    close: () =>
      lifecycle.close(async () => {
        await Promise.allSettled([...listeners].map((listener) => listener.close()));
        listeners.clear();
        await maker.end?.();
      }),
  };
  if (notify) {
    driver.listen = async (table: TableDefinition, onWake: () => void): Promise<WakeListener> => {
      // A pooler that hands the session on hears nothing: the first refusal is warned, then poll quietly.
      if (!(await probes.checkListen(table))) return { close: async () => {} };
      const listener = await ChannelListener.start(boundedPool, channelFor(table), onWake);
      listeners.add(listener);
      return {
        close: async () => {
          listeners.delete(listener);
          await listener.close();
        },
      };
    };
  }
  return driver;
}
