/**
 * The MySQL/MariaDB driver: {@link createMysqlDriver}.
 *
 * @module
 */
import {
  DeclarationError,
  type Driver,
  InvalidArgumentError,
  isolationLevels,
  type PublishResult,
  type RowId,
  type TableDefinition,
} from "@rowclaim/core";
import {
  acquireTimeoutOf,
  type Claimer,
  type DetectedCapabilities,
  type DriverCapabilities,
  DriverLifecycle,
  type DriverPublishOptions,
  driverCapabilities,
  type OpenOptions,
  type OperationsDriver,
  type OptionKeySet,
  type ProbeName,
  type PublishRow,
  type QueueStatusReader,
  refuseUniquePublishClient,
  refuseUnknownOptions,
  type ScheduleLedger,
  type UniquePublishRow,
} from "@rowclaim/core/driver";
import type { PoolConnection } from "mysql2/promise";
import { MysqlAdvisoryClaimer } from "./advisory.js";
import { BoundedPool, poolConnectionLimit } from "./bounded-pool.js";
import type { ClaimerContext } from "./claimer-context.js";
import { MysqlControlStore } from "./controls.js";
import { MysqlLeaseClaimer } from "./lease.js";
import { normalizeError } from "./normalize-error.js";
import { mysqlOperations } from "./operations.js";
import { createOwnPool } from "./own-pool.js";
import type { PoolLike } from "./pool-like.js";
import { MysqlProbes } from "./probe.js";
import { assertInTransaction, publishClient, publishRows } from "./publish.js";
import { mysqlStatusReader } from "./queue-status.js";
import { MysqlRowLockClaimer } from "./row-lock.js";
import { mysqlScheduleLedger } from "./schedule-ledger.js";
import { checkSchema, findClaimIndex } from "./schema-check.js";
import { readServerInfo, type ServerInfo } from "./server-info.js";
import { claimOrderColumns, createTableSql, TableStatements } from "./sql.js";
import { publishUniqueRows } from "./unique-publish.js";
import { assertFloor, parseServerVersion } from "./version.js";

/** A `mysql2/promise` pool you own (made as the README says; never ended by the driver), or a URL for a pool of its own. */
export type MysqlDriverOptions = (
  | { readonly pool: PoolLike }
  | {
      readonly url: string;
      /** Connections in the driver's pool (mysql2's default 10). Each delivery in work may hold one: see the README. */
      readonly connectionLimit?: number;
    }
) & {
  /** Takes the server for this `VERSION()` text (`"10.5.27-MariaDB"`), for tests of the version floor; leave it unset. */
  readonly assumeServerVersion?: string;
  /** Startup probes to skip (`src/probe.ts`, the README's "Where it runs"). Default: none. */
  readonly skipProbes?: readonly ProbeName[];
  /** How long a wait for a connection may last, in milliseconds, before `CONNECTION_TIMEOUT`. Default 30,000. */
  readonly acquireTimeoutMs?: number;
};

/** The keys `createMysqlDriver()` takes (checked against the option types when it compiles). */
const driverOptionKeys = Object.freeze(
  Object.keys({
    pool: true,
    url: true,
    connectionLimit: true,
    assumeServerVersion: true,
    skipProbes: true,
    acquireTimeoutMs: true,
  } satisfies OptionKeySet<MysqlDriverOptions>),
);

/** Refuses an unknown key and a `url` that is not `mysql://` or `mariadb://`, with `InvalidArgumentError`. */
function checkDriverOptions(options: object): void {
  refuseUnknownOptions(options, driverOptionKeys, "createMysqlDriver()");
  const url = (options as { url?: unknown }).url;
  const protocol = typeof url === "string" && URL.canParse(url) ? new URL(url).protocol : undefined;
  if (typeof url === "string" && url !== "" && protocol !== "mysql:" && protocol !== "mariadb:") {
    throw new InvalidArgumentError(
      `createMysqlDriver({ url }): ${JSON.stringify(url.replace(/(\/\/[^/@:]*:)[^/@]*@/, "$1***@"))} is not a MySQL connection URL. Write it as "mysql://user:password@host:3306/database".`,
    );
  }
}

/** What the MySQL driver offers: every form, FIFO in the row lock and lease forms, every isolation level. */
export const mysqlCapabilities: DriverCapabilities = driverCapabilities({
  forms: ["rowLock", "lease", "advisory"],
  fifo: ["rowLock", "lease"],
  isolationLevels,
  advisoryScope: "database",
  advisoryLimit: true,
  crossProcessWake: false,
  transactionalPublish: true,
  transactionalHandlers: ["rowLock", "lease", "advisory"],
  controls: true,
  schedules: true,
});

/** The MySQL/MariaDB driver, as {@link createMysqlDriver} returns it. */
export class MysqlDriver implements Driver {
  readonly name = "mysql";
  readonly dialect = "mysql";
  readonly capabilities = mysqlCapabilities;
  /** The pool the driver runs on. */
  readonly pool: PoolLike;
  /** The schedule ledger (`src/schedule-ledger.ts`). */
  readonly scheduleLedger: ScheduleLedger;
  /** The operations capability (cancel, redrive, prune, row listing): see `operations.ts`. */
  readonly operations: OperationsDriver;
  /** Type only: transactional handler bodies receive the mysql2/promise `PoolConnection` of the transaction. */
  declare readonly "~transactionClient"?: PoolConnection;
  readonly #ownsPool: boolean;
  /** {@link MysqlDriver.pool} with bounded waits: what every statement goes through. */
  readonly #bounded: PoolLike;
  readonly #assumeServerVersion: string | undefined;
  readonly #probes: MysqlProbes;
  /** Reads a table's counts and rows in work (`src/queue-status.ts`). */
  readonly queueStatus: QueueStatusReader;
  /** Pauses and rate counters (`src/controls.ts`). */
  readonly controls: MysqlControlStore;
  #server: Promise<ServerInfo> | undefined;
  readonly #lifecycle = new DriverLifecycle("MySQL");

  constructor(options: MysqlDriverOptions) {
    if (typeof options !== "object" || options === null) {
      throw new InvalidArgumentError(
        "createMysqlDriver() needs { pool } (a mysql2/promise pool) or { url }.",
      );
    }
    checkDriverOptions(options);
    if ("pool" in options) {
      if (typeof options.pool?.getConnection !== "function" || typeof options.pool.query !== "function") {
        throw new InvalidArgumentError(
          'createMysqlDriver({ pool }): pool must be a mysql2/promise pool (import { createPool } from "mysql2/promise").',
        );
      }
      this.pool = options.pool;
      this.#ownsPool = false;
    } else {
      if (typeof options.url !== "string" || options.url === "") {
        throw new InvalidArgumentError(
          'createMysqlDriver({ url }): url must be a connection URL such as "mysql://user:password@host:3306/database".',
        );
      }
      this.pool = createOwnPool(options.url, options.connectionLimit);
      this.#ownsPool = true;
    }
    this.#bounded = new BoundedPool(
      this.pool,
      acquireTimeoutOf("createMysqlDriver()", options.acquireTimeoutMs),
    );
    this.operations = mysqlOperations(this.#bounded);
    this.#assumeServerVersion = options.assumeServerVersion;
    this.#probes = new MysqlProbes(this.#bounded, options.skipProbes);
    this.queueStatus = mysqlStatusReader(this.#bounded);
    this.controls = new MysqlControlStore(this.#bounded);
    this.scheduleLedger = mysqlScheduleLedger(this.#bounded, () => this.serverInfo());
  }

  /** What the driver's startup probes found so far (`src/probe.ts`). */
  detected(): DetectedCapabilities {
    return this.#probes.detected();
  }

  /** The server's clock (`NOW(3)`), for the broker's clock-skew check of lease tables. */
  databaseTime(): Promise<Date> {
    return this.#probes.databaseTime();
  }

  /** The server's family, version and auto-increment step, read once. */
  serverInfo(): Promise<ServerInfo> {
    if (this.#server === undefined) {
      const assumed = this.#assumeServerVersion;
      const reading = readServerInfo(this.#bounded).then((info) =>
        assumed === undefined ? info : Object.freeze({ ...info, version: parseServerVersion(assumed) }),
      );
      this.#server = reading;
      reading.catch(() => {
        if (this.#server === reading) this.#server = undefined;
      });
    }
    return this.#server;
  }

  /** Opens a subscription's claimer once the pool's size, the server and the table pass their checks. */
  open(table: TableDefinition, options: OpenOptions): Promise<Claimer> {
    return this.#lifecycle.open(
      table,
      options,
      poolConnectionLimit(this.pool),
      () => this.#openChecked(table, options),
      (error) => normalizeError(error, { table: table.name, operation: `${table.form} open` }),
    );
  }

  async #openChecked(table: TableDefinition, options: OpenOptions): Promise<Claimer> {
    const server = await this.serverInfo();
    assertFloor(server.version, table.name);
    if (table.form === "rowLock" && table.fifo && table.isolation === "serializable") {
      throw new DeclarationError(
        `Table "${table.name}" (row lock form) is FIFO at isolation "serializable": its group guard reads the group's rows without waiting, and at SERIALIZABLE InnoDB turns every read into a locking one that waits on the deliveries in work. Use "read committed" (the default) or "repeatable read".`,
        { table: table.name },
      );
    }
    let claimIndex: string | undefined;
    if (table.form !== "advisory") {
      try {
        claimIndex = await findClaimIndex(this.#bounded, table);
      } catch (error) {
        throw normalizeError(error, { table: table.name, operation: `${table.form} open` });
      }
    }
    const statements = new TableStatements(table, options.group, claimIndex);
    const context: ClaimerContext = {
      pool: this.#bounded,
      family: server.version.family,
      table,
      statements,
      logger: options.logger,
    };
    const now = new Date();
    const claimStatement = (
      table.form === "advisory" ? statements.advisoryCandidates(now, 1) : statements.rowLockClaim(now, 1)
    ).sql;
    const dead =
      table.deadLetter !== undefined && "table" in table.deadLetter ? table.deadLetter.table : undefined;
    const deadStatement =
      dead === undefined
        ? undefined
        : statements.settlements({ countAttempt: false, tokenGuard: false }).moveToTable(dead, 0).insert.sql;
    try {
      await checkSchema(this.#bounded, table, claimStatement, deadStatement);
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        operation: `${table.form} open`,
        statement: claimStatement,
      });
    }
    if (table.form !== "advisory" && claimIndex === undefined && claimOrderColumns(table).length > 1) {
      options.logger.warn(
        `Table "${table.name}" (${table.form} form) has no index beginning with the claim order (${claimOrderColumns(table).join(", ")}): InnoDB may sort every due row for each claim and lock them all until the claim commits${table.form === "rowLock" ? " (in the row lock form, for the handlers' length), so claims beside it find nothing" : ""}. Create the index schemaSql() gives.`,
        { table: table.name },
      );
    }
    await this.#probes.check(table);
    switch (table.form) {
      case "rowLock":
        return new MysqlRowLockClaimer(context);
      case "lease":
        return new MysqlLeaseClaimer(context);
      case "advisory":
        return new MysqlAdvisoryClaimer(context);
    }
  }

  async publish(
    table: TableDefinition,
    rows: readonly PublishRow[],
    options: DriverPublishOptions,
  ): Promise<readonly RowId[]> {
    this.#lifecycle.assertOpen(table);
    const client = options.client === undefined ? this.#bounded : publishClient(options.client, table);
    let server: ServerInfo;
    try {
      server = await this.serverInfo();
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "publish" });
    }
    if (options.client !== undefined && rows.length > 0) await assertInTransaction(client, table);
    return publishRows(client, server, table, rows);
  }

  /** Unique publishes (tables with a key column): `src/unique-publish.ts`. */
  async publishUnique(
    table: TableDefinition,
    rows: readonly UniquePublishRow[],
    options: DriverPublishOptions,
  ): Promise<readonly PublishResult[]> {
    this.#lifecycle.assertOpen(table);
    refuseUniquePublishClient(table, options);
    return publishUniqueRows(this.#bounded, table, rows);
  }

  schemaSql(table: TableDefinition): string {
    return createTableSql(table);
  }

  close(): Promise<void> {
    return this.#lifecycle.close(() => (this.#ownsPool ? this.pool.end() : undefined));
  }
}

/**
 * Creates the MySQL 8.0.1+ / MariaDB 10.6+ driver.
 *
 * @example
 * const driver = createMysqlDriver({ url: "mysql://root@127.0.0.1:3306/app" });
 * const broker = createBroker({ driver });
 */
export function createMysqlDriver(options: MysqlDriverOptions): MysqlDriver {
  return new MysqlDriver(options);
}
