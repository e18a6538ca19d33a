/**
 * The conformance harness of the MySQL/MariaDB driver, shared by `conformance.test.ts` (the suite
 * on a pool the driver owns and on pools the harness owns) and `conformance-broken.test.ts` (the
 * suite failing deliberately broken variants of the driver).
 */
import { fileURLToPath } from "node:url";
import type {
  ConformanceHarness,
  SessionFault,
  SessionFaultDriver,
  StatementObserver,
  UserPoolDriver,
} from "@rowclaim/conformance";
import type { Driver, RowId, TableDefinition } from "@rowclaim/core";
import { type Connection, createConnection, createPool, type Pool } from "mysql2/promise";
import { createMysqlDriver, type MysqlDriverOptions, ownPoolOptions, quoteTable } from "../src/index.js";

/** What {@link mysqlHarness} needs. */
export interface MysqlHarnessOptions {
  readonly url: string;
  /** The report's name. */
  readonly name: string;
  /** Where the suite's table names start. */
  readonly tablePrefix: string;
  /** Which pool the suite's brokers run on. */
  readonly pools?: "driver" | "user";
  /** Changes every driver the harness makes (a deliberately broken variant); default: none. */
  readonly wrap?: (driver: Driver) => Driver;
  /** Changes every pool the harness makes for a user-pool driver before the driver gets it. */
  readonly wrapPool?: (pool: Pool) => Pool;
  /** Tests the harness opts out of, by title, with the reason (`ConformanceHarness.skip`). */
  readonly skip?: Readonly<Record<string, string>>;
}

/** The id column quoted for MySQL. */
function idColumn(table: TableDefinition): string {
  return `\`${table.columns.id.replaceAll("`", "``")}\``;
}

/** A pool made as the driver's README tells a user to make one (UTC, JSON as text, big numbers). */
function userPool(url: string): Pool {
  const pool = createPool({ uri: url, ...ownPoolOptions, connectionLimit: 12 });
  pool.on("connection", (connection) => {
    connection.query("SET time_zone = '+00:00'");
  });
  return pool;
}

/** The SQL text of a mysql2 `query` call's first argument (the text, or `{ sql }`). */
function sqlOf(statement: unknown): string {
  return typeof statement === "string" ? statement : String((statement as { sql?: unknown }).sql);
}

/**
 * `pool`, its every statement reported to `observer` first (and held back while `observer.before`
 * holds it): each connection it hands out runs its queries one after the other, each once the
 * previous one was answered, so a statement held back never lets a later one of its connection
 * pass it. A query on the pool itself runs on a connection checked out for it.
 */
function observedPool(pool: Pool, observer: StatementObserver): Pool {
  type Query = (...args: unknown[]) => Promise<unknown>;
  const replacing = <T extends object>(target: T, replaced: Record<string | symbol, unknown>): T =>
    new Proxy(target, {
      get(inner, property) {
        if (property in replaced) return replaced[property];
        const value: unknown = Reflect.get(inner, property, inner);
        return typeof value === "function" ? value.bind(inner) : value;
      },
    });
  const observe = <C extends { readonly threadId: number | null; query: unknown }>(connection: C): C => {
    let previous: Promise<unknown> = Promise.resolve();
    const query = (...args: unknown[]): Promise<unknown> => {
      const statement = { sql: sqlOf(args[0]), connection: connection.threadId ?? 0 };
      const sent = previous.then(async () => {
        await observer.before(statement);
        try {
          return await (connection.query as Query).apply(connection, args);
        } finally {
          observer.after(statement);
        }
      });
      previous = sent.catch(() => undefined);
      return sent;
    };
    return replacing(connection, { query });
  };
  const getConnection = async (): Promise<unknown> => observe(await pool.getConnection());
  const query = async (...args: unknown[]): Promise<unknown> => {
    const connection = observe(await pool.getConnection());
    try {
      return await (connection.query as Query)(...args);
    } finally {
      connection.release();
    }
  };
  return replacing(pool, { getConnection, query });
}

/**
 * A pool that records the statements sent through it and, just before statement `killAt`, has the
 * server end every connection checked out at that moment (`KILL CONNECTION`, then waiting until
 * the processlist no longer shows them), so the statement goes to a dead connection.
 */
function sessionFaultPool(
  pool: Pool,
  fault: SessionFault,
  kill: (threadIds: readonly number[]) => Promise<void>,
): { readonly pool: Pool; statements(): number; sent(): readonly string[] } {
  const sent: string[] = [];
  const out = new Set<{ readonly threadId: number | null }>();
  const beforeStatement = async (statement: unknown): Promise<void> => {
    sent.push(sqlOf(statement));
    if (sent.length !== fault.killAt) return;
    await kill([...out].flatMap(({ threadId }) => (threadId === null ? [] : [threadId])));
  };
  const passOn = <T extends object>(target: T, property: string | symbol): unknown => {
    const value: unknown = Reflect.get(target, property, target);
    return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
  };
  const counting =
    <T extends { query: (...args: never[]) => unknown }>(target: T) =>
    async (...args: Parameters<T["query"]>): Promise<unknown> => {
      await beforeStatement(args[0]);
      return (target.query as (...a: unknown[]) => unknown)(...args);
    };
  const faulty = new Proxy(pool, {
    get(target, property) {
      if (property === "query") return counting(target);
      if (property !== "getConnection") return passOn(target, property);
      return async () => {
        const connection = await target.getConnection();
        out.add(connection);
        return new Proxy(connection, {
          get(held, key) {
            if (key === "query") return counting(held);
            if (key === "release" || key === "destroy") {
              return () => {
                out.delete(connection);
                (held[key] as () => void).call(held);
              };
            }
            return passOn(held, key);
          },
        });
      };
    },
  });
  return { pool: faulty, statements: () => sent.length, sent: () => sent };
}

/** The MySQL `information_schema` row of the transaction that blocks connection `waiter`, if any. */
const blockerSql =
  "SELECT b.trx_isolation_level AS level FROM information_schema.INNODB_LOCK_WAITS w " +
  "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id " +
  "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id WHERE r.trx_mysql_thread_id = ?";

/**
 * The harness: an admin pool of its own for reading tables, holding row locks and asking the
 * server's lock views, and every optional hook of the suite. MariaDB keeps
 * `information_schema.INNODB_LOCK_WAITS`; on MySQL 8 read `performance_schema.data_lock_waits`.
 */
export function mysqlHarness(options: MysqlHarnessOptions): ConformanceHarness {
  const { url } = options;
  let admin: Pool | undefined;
  const adminPool = (): Pool => {
    admin ??= createPool({ uri: url, ...ownPoolOptions, multipleStatements: true, connectionLimit: 6 });
    return admin;
  };
  const wrap = options.wrap ?? ((driver: Driver) => driver);
  // Pools of observed drivers, ended with the harness (the driver leaves a pool it was given open).
  const ended: Pool[] = [];
  const make = (driverOptions: MysqlDriverOptions): Driver => wrap(createMysqlDriver(driverOptions));
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  return {
    name: options.name,
    tablePrefix: options.tablePrefix,
    ...(options.pools === undefined ? {} : { pools: options.pools }),
    ...(options.skip === undefined ? {} : { skip: options.skip }),
    createDriver: () => make({ url, connectionLimit: 12 }),
    createUserPoolDriver(): UserPoolDriver {
      const pool = userPool(url);
      // mysql2 keeps the pool's connections in private lists; checked out = all minus free.
      const inner = (
        pool as unknown as {
          pool: { _allConnections: { length: number }; _freeConnections: { length: number } };
        }
      ).pool;
      return {
        driver: make({ pool: options.wrapPool?.(pool) ?? pool }),
        checkedOut: () => inner._allConnections.length - inner._freeConnections.length,
        end: () => pool.end(),
      };
    },
    createObservedDriver(observer: StatementObserver): Driver {
      const pool = userPool(url);
      ended.push(pool);
      return make({ pool: observedPool(pool, observer) });
    },
    createSizedPoolDriver({ max, acquireTimeoutMs }) {
      const pool = createPool({ uri: url, ...ownPoolOptions, connectionLimit: max });
      pool.on("connection", (connection) => {
        connection.query("SET time_zone = '+00:00'");
      });
      const inner = (
        pool as unknown as {
          pool: { _allConnections: { length: number }; _freeConnections: { length: number } };
        }
      ).pool;
      return {
        driver: make({ pool, acquireTimeoutMs }),
        checkedOut: () => inner._allConnections.length - inner._freeConnections.length,
        end: () => pool.end(),
        async holdAll() {
          const connections = await Promise.all(Array.from({ length: max }, () => pool.getConnection()));
          return async () => {
            for (const connection of connections) connection.release();
          };
        },
      };
    },
    async execute(sql) {
      await adminPool().query(sql);
    },
    async readRows(table) {
      const [rows] = await adminPool().query(
        `SELECT * FROM ${quoteTable(table.name, table.schema)} ORDER BY ${idColumn(table)}`,
      );
      return rows as Record<string, unknown>[];
    },
    async dropTable(table) {
      await adminPool().query(`DROP TABLE IF EXISTS ${quoteTable(table.name, table.schema)}`);
    },
    // The client publish({ client }) takes: a mysql2/promise connection of the tests' own pool, in a
    // transaction opened here (readRows reads on the pool's other connections, outside it).
    async inTransaction(body, { rollback }) {
      const connection = await adminPool().getConnection();
      try {
        await connection.beginTransaction();
        try {
          await body(connection);
        } catch (error) {
          await connection.rollback();
          throw error;
        }
        await (rollback ? connection.rollback() : connection.commit());
      } finally {
        connection.release();
      }
    },
    // A probe transaction asks for the row with SELECT … FOR UPDATE and waits; the server's lock
    // views name the transaction it waits for, and that transaction's isolation level.
    // The probe is a connection of its own, never a pooled one: InnoDB's information_schema
    // lock views are a snapshot, refreshed only when it was not read for 0.1 s, and a pooled
    // connection's thread id could still match the wait a previous test's probe left in it.
    async claimIsolation(table: TableDefinition, id: RowId): Promise<string> {
      const pool = adminPool();
      const probe: Connection = await createConnection({ uri: url, ...ownPoolOptions });
      try {
        await probe.query("SET SESSION innodb_lock_wait_timeout = 30");
        await probe.beginTransaction();
        const waiting = probe
          .query(
            `SELECT 1 FROM ${quoteTable(table.name, table.schema)} WHERE ${idColumn(table)} = ? FOR UPDATE`,
            [id],
          )
          .then(
            () => undefined,
            () => undefined,
          );
        let level: string | undefined;
        const deadline = Date.now() + 20_000;
        while (level === undefined && Date.now() < deadline) {
          const [rows] = await pool.query(blockerSql, [probe.threadId]);
          level = (rows as { level?: string }[])[0]?.level;
          // Slower than the snapshot's 0.1 s: InnoDB refreshes it only when it was not read for
          // that long, so a faster poll would keep reading the same stale snapshot.
          if (level === undefined) await sleep(250);
        }
        await pool.query(`KILL QUERY ${Number(probe.threadId)}`);
        await waiting;
        if (level === undefined)
          throw new Error(`No transaction holds row ${String(id)} of "${table.name}" locked.`);
        return level.toLowerCase();
      } finally {
        await probe.rollback().catch(() => undefined);
        await probe.end().catch(() => undefined);
      }
    },
    async holdRowLock(table: TableDefinition, id: RowId) {
      const connection = await adminPool().getConnection();
      try {
        await connection.beginTransaction();
        await connection.query(
          `SELECT 1 FROM ${quoteTable(table.name, table.schema)} WHERE ${idColumn(table)} = ? FOR UPDATE`,
          [id],
        );
      } catch (error) {
        connection.destroy();
        throw error;
      }
      return {
        release: async () => {
          try {
            await connection.rollback();
          } finally {
            connection.release();
          }
        },
      };
    },
    // The GET_LOCK name as the driver builds it (lockNameExpression): database, ".", key; past 64
    // characters its SHA-256.
    async advisoryKeyHeld(key: string): Promise<boolean> {
      const [rows] = await adminPool().query(
        "SELECT IS_USED_LOCK(IF(CHAR_LENGTH(n) > 64, SHA2(n, 256), n)) IS NOT NULL AS held FROM (SELECT CONCAT(LOWER(CONVERT(DATABASE() USING utf8mb4)), '.', ?) AS n) AS k",
        [key],
      );
      return Number((rows as { held?: unknown }[])[0]?.held) === 1;
    },
    // A CHECK constraint refuses every processedAt value (the suite's tables name the column processed_at).
    async refuseProcessedAt(table: TableDefinition, only?: RowId) {
      const constraint = `\`${table.name}_refuse_processed\``;
      const ref = quoteTable(table.name, table.schema);
      if (only !== undefined) {
        // A CHECK cannot name an AUTO_INCREMENT column: a trigger refuses that row's processedAt
        // with a foreign key's error number, as a referencing row would.
        await adminPool().query(
          `CREATE TRIGGER ${constraint} BEFORE UPDATE ON ${ref} FOR EACH ROW BEGIN IF NEW.\`processed_at\` IS NOT NULL AND NEW.\`${table.columns.id}\` = ${Number(only)} THEN SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1451, MESSAGE_TEXT = 'processed_at refused by the conformance harness'; END IF; END`,
        );
        return async () => {
          await adminPool().query(`DROP TRIGGER IF EXISTS ${constraint}`);
        };
      }
      await adminPool().query(
        `ALTER TABLE ${ref} ADD CONSTRAINT ${constraint} CHECK (\`processed_at\` IS NULL)`,
      );
      return async () => {
        await adminPool().query(`ALTER TABLE ${ref} DROP CONSTRAINT ${constraint}`);
      };
    },
    createSessionFaultDriver(fault: SessionFault): SessionFaultDriver {
      const own = userPool(url);
      const faulty = sessionFaultPool(own, fault, async (ids) => {
        for (const id of ids)
          await adminPool()
            .query("KILL CONNECTION ?", [id])
            .catch(() => undefined);
        for (let tries = 0; tries < 200 && ids.length > 0; tries += 1) {
          const [rows] = await adminPool().query(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID IN (?)",
            [[...ids]],
          );
          if (Number((rows as { n: unknown }[])[0]?.n) === 0) return;
          await sleep(10);
        }
      });
      return {
        driver: make({ pool: faulty.pool }),
        statements: faulty.statements,
        sent: faulty.sent,
        end: () => own.end(),
      };
    },
    serverAddress: { host: new URL(url).hostname, port: Number(new URL(url).port || 3306) },
    createDriverAt(address) {
      const at = new URL(url);
      at.hostname = address.host;
      at.port = String(address.port);
      return make({ url: at.toString(), connectionLimit: 12 });
    },
    olderServer: {
      version: "MariaDB 10.5.27 / MySQL 8.0.0",
      async createDriver() {
        // One release below the floor of the family the server is.
        const [rows] = await adminPool().query("SELECT VERSION() AS v");
        const mariadb = /mariadb/i.test(String((rows as { v?: unknown }[])[0]?.v));
        return make({ url, connectionLimit: 4, assumeServerVersion: mariadb ? "10.5.27-MariaDB" : "8.0.0" });
      },
      // MariaDB 10.6 is the first release that skips locked rows: every form needs it.
      refuses: () => true,
    },
    childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
    async close() {
      await Promise.allSettled(ended.map((pool) => pool.end()));
      await admin?.end();
      admin = undefined;
    },
  };
}
