/**
 * The MySQL/MariaDB driver: {@link createMysqlDriver}.
 *
 * @module
 */
import {
  type Claimer,
  ClosedError,
  DeclarationError,
  type Driver,
  type DriverCapabilities,
  type DriverPublishOptions,
  driverCapabilities,
  isolationLevels,
  type OpenOptions,
  type PublishRow,
  type RowId,
  type TableDefinition,
} from "@rowclaim/core";
import { MysqlAdvisoryClaimer } from "./advisory.js";
import type { ClaimerContext } from "./claimer-context.js";
import type { PoolLike } from "./client.js";
import { MysqlLeaseClaimer } from "./lease.js";
import { normalizeError } from "./normalize-error.js";
import { createOwnPool } from "./own-pool.js";
import { publishClient, publishRows } from "./publish.js";
import { MysqlRowLockClaimer } from "./row-lock.js";
import { checkSchema } from "./schema-check.js";
import { readServerInfo, type ServerInfo } from "./server-info.js";
import { createTableSql, TableStatements } from "./sql.js";
import { assertFloor } from "./version.js";

/**
 * How the driver reaches the server: a `mysql2/promise` pool you own (never ended by the
 * driver; make it with `timezone: "Z"`, see the README), or a URL for a pool the driver makes
 * and ends on `close()`.
 */
export type MysqlDriverOptions =
  | { readonly pool: PoolLike }
  | {
      readonly url: string;
      /** Connections in the driver's pool (mysql2's default 10). Each delivery in work may hold one: see the README. */
      readonly connectionLimit?: number;
    };

/** What the MySQL driver offers: every form, FIFO in the row lock and lease forms, every isolation level. */
export const mysqlCapabilities: DriverCapabilities = driverCapabilities({
  forms: ["rowLock", "lease", "advisory"],
  fifo: ["rowLock", "lease"],
  isolationLevels,
  advisoryScope: "database",
  crossProcessWake: false,
  transactionalPublish: true,
});

/** The MySQL/MariaDB driver, as {@link createMysqlDriver} returns it. */
export class MysqlDriver implements Driver {
  readonly name = "mysql";
  readonly dialect = "mysql";
  readonly capabilities = mysqlCapabilities;
  /** The pool the driver runs on. */
  readonly pool: PoolLike;
  readonly #ownsPool: boolean;
  #server: Promise<ServerInfo> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: MysqlDriverOptions) {
    if (typeof options !== "object" || options === null) {
      throw new DeclarationError("createMysqlDriver() needs { pool } (a mysql2/promise pool) or { url }.");
    }
    if ("pool" in options) {
      if (typeof options.pool?.getConnection !== "function" || typeof options.pool.query !== "function") {
        throw new DeclarationError(
          'createMysqlDriver({ pool }): pool must be a mysql2/promise pool (import { createPool } from "mysql2/promise").',
        );
      }
      this.pool = options.pool;
      this.#ownsPool = false;
    } else {
      if (typeof options.url !== "string" || options.url === "") {
        throw new DeclarationError(
          'createMysqlDriver({ url }): url must be a connection URL such as "mysql://user:password@host:3306/database".',
        );
      }
      this.pool = createOwnPool(options.url, options.connectionLimit);
      this.#ownsPool = true;
    }
  }

  /** The server's family, version and auto-increment step, read once. */
  serverInfo(): Promise<ServerInfo> {
    if (this.#server === undefined) {
      const reading = readServerInfo(this.pool);
      this.#server = reading;
      reading.catch(() => {
        if (this.#server === reading) this.#server = undefined;
      });
    }
    return this.#server;
  }

  async open(table: TableDefinition, options: OpenOptions): Promise<Claimer> {
    this.#assertOpen(table);
    const server = await this.serverInfo();
    assertFloor(server.version, table.name);
    if (table.form === "rowLock" && table.fifo && table.isolation === "serializable") {
      throw new DeclarationError(
        `Table "${table.name}" (row lock form) is FIFO at isolation "serializable": its group guard reads the group's rows without waiting, and at SERIALIZABLE InnoDB turns every read into a locking one that waits on the deliveries in work. Use "read committed" (the default) or "repeatable read".`,
        { table: table.name },
      );
    }
    const statements = new TableStatements(table, options.group);
    const context: ClaimerContext = { pool: this.pool, table, statements, logger: options.logger };
    const now = new Date();
    const claimStatement =
      table.form === "rowLock"
        ? statements.rowLockClaim(now, 1).sql
        : table.form === "lease"
          ? statements.leaseSelect(now, 1).sql
          : statements.advisoryCandidates(now, 1).sql;
    const dead =
      table.deadLetter !== undefined && "table" in table.deadLetter ? table.deadLetter.table : undefined;
    const deadStatement =
      dead === undefined
        ? undefined
        : statements.settlements({ countAttempt: false, tokenGuard: false }).moveToTable(dead, 0).insert.sql;
    try {
      await checkSchema(this.pool, table, claimStatement, deadStatement);
    } catch (error) {
      throw normalizeError(error, {
        table: table.name,
        operation: `${table.form} open`,
        statement: claimStatement,
      });
    }
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
    this.#assertOpen(table);
    const client = options.client === undefined ? this.pool : publishClient(options.client, table);
    return publishRows(client, await this.serverInfo(), table, rows);
  }

  schemaSql(table: TableDefinition): string {
    return createTableSql(table);
  }

  close(): Promise<void> {
    this.#closing ??= this.#ownsPool ? this.pool.end() : Promise.resolve();
    return this.#closing;
  }

  #assertOpen(table: TableDefinition): void {
    if (this.#closing !== undefined) {
      throw new ClosedError(
        `The MySQL driver is closed; table "${table.name}" cannot be used through it. Create a new driver.`,
        {
          table: table.name,
        },
      );
    }
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
