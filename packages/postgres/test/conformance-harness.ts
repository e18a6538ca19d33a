/**
 * The conformance harness of the PostgreSQL driver, shared by `conformance.test.ts` (the suite on
 * a pool the driver owns and on pools the harness owns) and `conformance-broken.test.ts` (the
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
import pg from "pg";
import { createPostgresDriver, type PostgresDriverOptions, quoteIdent } from "../src/index.js";

/** What {@link postgresHarness} needs. */
export interface PostgresHarnessOptions {
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
  readonly wrapPool?: (pool: pg.Pool) => pg.Pool;
  /** Tests this run opts out of, by name, each with the reason the report shows. */
  readonly skip?: Readonly<Record<string, string>>;
}

/** The table reference as the driver quotes it. */
export function tableRef(table: TableDefinition): string {
  return table.schema === undefined
    ? quoteIdent(table.name)
    : `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`;
}

/** A client's backend process id (pg sets it at connect; its types leave it out). */
function processIdOf(client: pg.PoolClient): number | undefined {
  const id = (client as unknown as { processID?: unknown }).processID;
  return typeof id === "number" ? id : undefined;
}

/**
 * `pool`, its every statement reported to `observer` first (and held back while `observer.before`
 * holds it): the clients it checks out run their queries one after the other, each once the
 * previous one was answered, so a statement held back never lets a later one of its connection
 * pass it.
 */
function observedPool(pool: pg.Pool, observer: StatementObserver): pg.Pool {
  let sessions = 0;
  const observe = (client: pg.PoolClient): pg.PoolClient => {
    const connection = processIdOf(client) ?? --sessions;
    let previous: Promise<unknown> = Promise.resolve();
    const query = (config: string | { readonly text: string }, ...rest: unknown[]): Promise<unknown> => {
      const statement = { sql: typeof config === "string" ? config : config.text, connection };
      const sent = previous.then(async () => {
        await observer.before(statement);
        try {
          return await (client.query as (...args: unknown[]) => Promise<unknown>)(config, ...rest);
        } finally {
          observer.after(statement);
        }
      });
      previous = sent.catch(() => undefined);
      return sent;
    };
    return new Proxy(client, {
      get(target, property) {
        if (property === "query") return query;
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  const connect = async (): Promise<pg.PoolClient> => observe(await pool.connect());
  const query = async (config: string | { readonly text: string }): Promise<unknown> => {
    const client = await connect();
    try {
      return await client.query(config);
    } finally {
      client.release();
    }
  };
  return new Proxy(pool, {
    get(target, property) {
      if (property === "connect") return connect;
      if (property === "query") return query;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * A pool that records the statements sent through it and, just before statement `killAt`, ends
 * the backend of every client checked out at that moment (and of the one the statement goes to):
 * `pg_terminate_backend` with a wait, so that the sessions are gone before the statement is sent.
 */
function sessionFaultPool(
  pool: pg.Pool,
  fault: SessionFault,
  terminate: (pids: readonly number[]) => Promise<void>,
): { readonly pool: pg.Pool; statements(): number; sent(): readonly string[] } {
  const sent: string[] = [];
  const out = new Set<pg.PoolClient>();
  const beforeStatement = async (statement: unknown): Promise<void> => {
    sent.push(textOf(statement));
    if (sent.length !== fault.killAt) return;
    const pids = [...out].map(processIdOf).filter((pid): pid is number => pid !== undefined);
    await terminate(pids);
  };
  const faultyClient = (client: pg.PoolClient): pg.PoolClient =>
    new Proxy(client, {
      get(target, property) {
        if (property === "query") {
          return async (...args: Parameters<pg.PoolClient["query"]>) => {
            await beforeStatement(args[0]);
            return (target.query as (...a: unknown[]) => unknown)(...args);
          };
        }
        if (property === "release") {
          return (destroy?: Error | boolean) => {
            out.delete(target);
            target.release(destroy);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  const faulty = new Proxy(pool, {
    get(target, property) {
      if (property === "connect") {
        return async () => {
          const client = await target.connect();
          out.add(client);
          return faultyClient(client);
        };
      }
      if (property === "query") {
        return async (...args: Parameters<pg.Pool["query"]>) => {
          // A pool's own query checks a client out: end the backends of those already out.
          await beforeStatement(args[0]);
          return (target.query as (...a: unknown[]) => unknown)(...args);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool: faulty, statements: () => sent.length, sent: () => sent };
}

/** The SQL text of a `query()` call's first argument (a string or a query config). */
function textOf(statement: unknown): string {
  if (typeof statement === "string") return statement;
  const text = (statement as { text?: unknown } | null)?.text;
  return typeof text === "string" ? text : String(statement);
}

/**
 * The harness: drivers with `notify: true` (so the cross-process wake-up test runs), an admin
 * pool of its own for reading tables, holding row locks and asking `pg_locks`, and every
 * optional hook of the suite.
 */
export function postgresHarness(options: PostgresHarnessOptions): ConformanceHarness {
  const { url } = options;
  const admin = new pg.Pool({
    connectionString: url,
    max: 6,
    application_name: "rowclaim-conformance-admin",
  });
  admin.on("error", () => {});
  // Every client a driver of this harness checked out, by backend pid: claimIsolation() asks the
  // session that holds a row lock for its transaction's isolation level.
  const clients = new Map<number, pg.PoolClient>();
  const track = (pool: pg.Pool): void => {
    pool.on("acquire", (client) => {
      const pid = processIdOf(client);
      if (pid !== undefined) clients.set(pid, client);
    });
  };
  const wrap = options.wrap ?? ((driver: Driver) => driver);
  // Pools of observed drivers, ended with the harness (the driver leaves a pool it was given open).
  const ended: pg.Pool[] = [];
  const make = (driverOptions: PostgresDriverOptions): Driver => {
    const driver = createPostgresDriver(driverOptions);
    track(driver.pool as pg.Pool);
    return wrap(driver);
  };

  return {
    name: options.name,
    tablePrefix: options.tablePrefix,
    ...(options.pools === undefined ? {} : { pools: options.pools }),
    ...(options.skip === undefined ? {} : { skip: options.skip }),
    createDriver: () => make({ url, max: 12, notify: true }),
    createUserPoolDriver(): UserPoolDriver {
      const own = new pg.Pool({ connectionString: url, max: 12, application_name: "rowclaim-user-pool" });
      own.on("error", () => {});
      const pool = options.wrapPool?.(own) ?? own;
      // Checked out: acquired and not yet released (a client released to be destroyed still counts
      // in pg's totalCount until its socket has closed, but it is back: the driver let it go).
      const out = new Set<pg.PoolClient>();
      own.on("acquire", (client) => out.add(client));
      own.on("release", (_error, client) => out.delete(client));
      return {
        driver: make({ pool, notify: true }),
        checkedOut: () => out.size,
        end: () => own.end(),
      };
    },
    createObservedDriver(observer: StatementObserver): Driver {
      const own = new pg.Pool({ connectionString: url, max: 12, application_name: "rowclaim-observed" });
      own.on("error", () => {});
      ended.push(own);
      return make({ pool: observedPool(own, observer) });
    },
    createSizedPoolDriver({ max, acquireTimeoutMs }) {
      const own = new pg.Pool({ connectionString: url, max, application_name: "rowclaim-sized-pool" });
      own.on("error", () => {});
      const out = new Set<pg.PoolClient>();
      own.on("acquire", (client) => out.add(client));
      own.on("release", (_error, client) => out.delete(client));
      return {
        driver: make({ pool: own, acquireTimeoutMs }),
        checkedOut: () => out.size,
        end: () => own.end(),
        async holdAll() {
          const clients = await Promise.all(Array.from({ length: max }, () => own.connect()));
          return async () => {
            for (const client of clients) client.release();
          };
        },
      };
    },
    execute: async (sql) => {
      await admin.query(sql);
    },
    readRows: async (table) =>
      (await admin.query(`SELECT * FROM ${tableRef(table)} ORDER BY ${quoteIdent(table.columns.id)}`)).rows,
    dropTable: async (table) => {
      await admin.query(`DROP TABLE IF EXISTS ${tableRef(table)}`);
    },
    inTransaction: async (body, { rollback }) => {
      const client = await admin.connect();
      try {
        await client.query("BEGIN");
        try {
          await body(client);
        } catch (error) {
          await client.query("ROLLBACK");
          throw error;
        }
        await client.query(rollback ? "ROLLBACK" : "COMMIT");
      } finally {
        client.release();
      }
    },
    // The row's xmax names the transaction that locked it; pg_locks names that transaction's
    // session; the session answers for its own transaction.
    async claimIsolation(table: TableDefinition, id: RowId): Promise<string> {
      const holder = await admin.query(
        `SELECT l.pid FROM pg_locks l WHERE l.locktype = 'transactionid' AND l.granted AND l.mode = 'ExclusiveLock' AND l.transactionid = (SELECT xmax FROM ${tableRef(table)} WHERE ${quoteIdent(table.columns.id)} = $1)`,
        [id],
      );
      const pid = holder.rows[0]?.pid as number | undefined;
      const client = pid === undefined ? undefined : clients.get(pid);
      if (client === undefined) {
        throw new Error(
          `No session of the driver holds row ${String(id)} of "${table.name}" locked (holder pid ${String(pid)}).`,
        );
      }
      const result = await client.query("SELECT current_setting('transaction_isolation') AS level");
      return String(result.rows[0]?.level);
    },
    async holdRowLock(table: TableDefinition, id: RowId) {
      const client = await admin.connect();
      try {
        await client.query("BEGIN");
        await client.query(
          `SELECT 1 FROM ${tableRef(table)} WHERE ${quoteIdent(table.columns.id)} = $1 FOR UPDATE`,
          [id],
        );
      } catch (error) {
        client.release(true);
        throw error;
      }
      return {
        release: async () => {
          try {
            await client.query("ROLLBACK");
          } finally {
            client.release();
          }
        },
      };
    },
    // A session advisory lock on a 64-bit key shows in pg_locks as classid (high half), objid (low half), objsubid 1.
    async advisoryKeyHeld(key: string): Promise<boolean> {
      const result = await admin.query(
        "WITH k AS (SELECT hashtextextended($1::text, 0) AS h) SELECT EXISTS (SELECT 1 FROM pg_locks l, k WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND l.classid = ((k.h >> 32) & 4294967295)::oid AND l.objid = (k.h & 4294967295)::oid) AS held",
        [key],
      );
      return result.rows[0]?.held === true;
    },
    // A CHECK constraint refuses every processedAt value (the suite's tables name the column processed_at).
    async refuseProcessedAt(table: TableDefinition, only?: RowId) {
      const constraint = quoteIdent(`${table.name}_refuse_processed`);
      const which = only === undefined ? "" : ` OR ${quoteIdent(table.columns.id)} <> ${Number(only)}`;
      await admin.query(
        `ALTER TABLE ${tableRef(table)} ADD CONSTRAINT ${constraint} CHECK (${quoteIdent("processed_at")} IS NULL${which})`,
      );
      return async () => {
        await admin.query(`ALTER TABLE ${tableRef(table)} DROP CONSTRAINT ${constraint}`);
      };
    },
    createSessionFaultDriver(fault: SessionFault): SessionFaultDriver {
      const own = new pg.Pool({ connectionString: url, max: 12, application_name: "rowclaim-fault-pool" });
      own.on("error", () => {});
      const faulty = sessionFaultPool(own, fault, async (pids) => {
        // Only the fault pool's own sessions: a pid the server has since given another session is left alone.
        await admin.query(
          "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND application_name = 'rowclaim-fault-pool'",
          [[...pids]],
        );
      });
      return {
        driver: make({ pool: faulty.pool, notify: true }),
        statements: faulty.statements,
        sent: faulty.sent,
        end: () => own.end(),
      };
    },
    serverAddress: { host: new URL(url).hostname, port: Number(new URL(url).port || 5432) },
    createDriverAt(address) {
      const at = new URL(url);
      at.hostname = address.host;
      at.port = String(address.port);
      return make({ url: at.toString(), max: 12, notify: true });
    },
    olderServer: {
      version: "PostgreSQL 10.23",
      createDriver: () => make({ url, max: 4, assumeServerVersion: "10.23" }),
      // hashtextextended came with PostgreSQL 11: the advisory lock form and FIFO groups need it.
      refuses: (table) => table.form === "advisory" || table.fifo,
    },
    childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
    close: async () => {
      await Promise.allSettled(ended.map((pool) => pool.end()));
      await admin.end();
    },
  };
}
