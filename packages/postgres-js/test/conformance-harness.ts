/**
 * The conformance harness of the postgres.js driver: the pg driver's harness with postgres.js
 * instances where the driver's pools were (the harness's own reads and locks run on `pg`).
 */
import { fileURLToPath } from "node:url";
import type {
  ConformanceHarness,
  SessionFault,
  StatementObserver,
  UserPoolDriver,
} from "@rowclaim/conformance";
import type { Driver, RowId, TableDefinition } from "@rowclaim/core";
import { quoteIdent } from "@rowclaim/postgres/sql";
import pg from "pg";
import postgres, { type ReservedSql, type Sql } from "postgres";
import { createPostgresJsDriver, type PostgresJsDriverOptions } from "../src/index.js";

/** The table reference as the driver quotes it. */
export function tableRef(table: TableDefinition): string {
  return table.schema === undefined
    ? quoteIdent(table.name)
    : `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`;
}

type Unsafe = Sql["unsafe"];

/** A reserved connection of a watched instance: its backend, and the statements it sends. */
interface Watched {
  pid: number | undefined;
  readonly reserved: ReservedSql;
}

/** What a watched instance lets the harness do around each statement of a reserved connection. */
interface Watch {
  before?(watched: Watched, text: string): Promise<void>;
  after?(watched: Watched, text: string): void;
  /** Serialises each connection's statements (the observer's contract). */
  readonly serial?: boolean;
}

/**
 * A postgres.js instance of the harness's own whose reserved connections are counted while out
 * (until the driver's `release`, which the adapter sets on the connection) and whose statements
 * pass `watch`.
 */
function watchedSql(max: number, appName: string, url: string, watch: Watch = {}) {
  const sql = postgres(url, {
    max,
    idle_timeout: 5,
    connection: { application_name: appName },
    onnotice: () => {},
  });
  const out = new Set<Watched>();
  const reserve = sql.reserve.bind(sql);
  sql.reserve = async () => {
    const reserved = await reserve();
    const watched: Watched = { pid: undefined, reserved };
    out.add(watched);
    const unsafe: Unsafe = reserved.unsafe.bind(reserved);
    let previous: Promise<unknown> = Promise.resolve();
    const watchedUnsafe = ((text: string, ...rest: unknown[]) => {
      const go = async () => {
        await watch.before?.(watched, text);
        try {
          const pending = (unsafe as (...args: unknown[]) => ReturnType<Unsafe>)(text, ...rest);
          const result = await pending;
          watched.pid ??= (result as { state?: { pid?: number } }).state?.pid;
          return result;
        } finally {
          watch.after?.(watched, text);
        }
      };
      const sent = watch.serial === true ? previous.then(go) : go();
      previous = sent.catch(() => undefined);
      return sent;
    }) as Unsafe;
    return new Proxy(reserved, {
      get(target, property) {
        if (property === "unsafe") return watchedUnsafe;
        return Reflect.get(target, property, target);
      },
      set(target, property, value) {
        if (property === "release" && typeof value === "function") {
          const release = value as (...args: unknown[]) => unknown;
          return Reflect.set(target, property, (...args: unknown[]) => {
            out.delete(watched);
            return release(...args);
          });
        }
        return Reflect.set(target, property, value);
      },
    });
  };
  return { sql, out };
}

/** The harness: drivers with `notify: true`, an admin `pg` pool, and every optional hook of the suite. */
export function postgresJsHarness(options: {
  readonly url: string;
  readonly name: string;
  readonly tablePrefix: string;
  readonly pools?: "driver" | "user";
  readonly skip?: Readonly<Record<string, string>>;
}): ConformanceHarness {
  const { url } = options;
  const admin = new pg.Pool({
    connectionString: url,
    max: 6,
    application_name: "rowclaim-conformance-admin",
  });
  admin.on("error", () => {});
  const adminJs = postgres(url, { max: 2, onnotice: () => {} });
  // Reserved connections of every watched instance by backend pid, for claimIsolation().
  const byPid = new Map<number, Watched>();
  const ended: Sql[] = [];
  const make = (driverOptions: PostgresJsDriverOptions): Driver => createPostgresJsDriver(driverOptions);
  // A driver on an instance of the harness's that no test ends itself: ended right after the driver closed.
  const makeEnding = (sql: Sql, driverOptions: PostgresJsDriverOptions): Driver => {
    const driver = make(driverOptions);
    const close = driver.close.bind(driver);
    driver.close = async () => {
      try {
        await close();
      } finally {
        await sql.end({ timeout: 5 });
      }
    };
    return driver;
  };
  const own = (max: number, appName: string, watch: Watch = {}) => {
    const made = watchedSql(max, appName, url, {
      ...watch,
      after(watched, text) {
        if (watched.pid !== undefined) byPid.set(watched.pid, watched);
        watch.after?.(watched, text);
      },
    });
    return made;
  };

  return {
    name: options.name,
    tablePrefix: options.tablePrefix,
    ...(options.pools === undefined ? {} : { pools: options.pools }),
    ...(options.skip === undefined ? {} : { skip: options.skip }),
    createDriver() {
      const { sql } = own(12, "rowclaim-conformance");
      ended.push(sql);
      return makeEnding(sql, { sql, notify: true });
    },
    createUserPoolDriver(): UserPoolDriver {
      const { sql, out } = own(12, "rowclaim-user-pool");
      return {
        driver: make({ sql, notify: true }),
        checkedOut: () => out.size,
        end: () => sql.end({ timeout: 5 }),
      };
    },
    createObservedDriver(observer: StatementObserver): Driver {
      const statements = new Map<string, { sql: string; connection: number }>();
      let sessions = 0;
      const ids = new WeakMap<Watched, number>();
      const idOf = (watched: Watched): number => {
        let id = ids.get(watched);
        if (id === undefined) {
          sessions += 1;
          id = sessions;
          ids.set(watched, id);
        }
        return id;
      };
      const { sql } = own(12, "rowclaim-observed", {
        serial: true,
        async before(watched, text) {
          const statement = { sql: text, connection: idOf(watched) };
          statements.set(`${idOf(watched)}`, statement);
          await observer.before(statement);
        },
        after(watched) {
          const statement = statements.get(`${idOf(watched)}`);
          if (statement !== undefined) observer.after(statement);
        },
      });
      ended.push(sql);
      return makeEnding(sql, { sql });
    },
    createSizedPoolDriver({ max, acquireTimeoutMs }) {
      const { sql, out } = own(max, "rowclaim-sized-pool");
      return {
        driver: make({ sql, acquireTimeoutMs }),
        checkedOut: () => out.size,
        end: () => sql.end({ timeout: 5 }),
        async holdAll() {
          const held = await Promise.all(Array.from({ length: max }, () => sql.reserve()));
          return async () => {
            for (const reserved of held) reserved.release();
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
      const rolledBack = new Error("rolled back");
      try {
        await adminJs.begin(async (tx) => {
          await body(tx);
          if (rollback) throw rolledBack;
        });
      } catch (error) {
        if (error !== rolledBack) throw error;
      }
    },
    async claimIsolation(table: TableDefinition, id: RowId): Promise<string> {
      const holder = await admin.query(
        `SELECT l.pid FROM pg_locks l WHERE l.locktype = 'transactionid' AND l.granted AND l.mode = 'ExclusiveLock' AND l.transactionid = (SELECT xmax FROM ${tableRef(table)} WHERE ${quoteIdent(table.columns.id)} = $1)`,
        [id],
      );
      const pid = holder.rows[0]?.pid as number | undefined;
      const watched = pid === undefined ? undefined : byPid.get(pid);
      if (watched === undefined) {
        throw new Error(
          `No session of the driver holds row ${String(id)} of "${table.name}" locked (holder pid ${String(pid)}).`,
        );
      }
      const rows = await watched.reserved.unsafe("SELECT current_setting('transaction_isolation') AS level");
      return String(rows[0]?.level);
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
    async advisoryKeyHeld(key: string): Promise<boolean> {
      const result = await admin.query(
        "WITH k AS (SELECT hashtextextended($1::text, 0) AS h) SELECT EXISTS (SELECT 1 FROM pg_locks l, k WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND l.classid = ((k.h >> 32) & 4294967295)::oid AND l.objid = (k.h & 4294967295)::oid) AS held",
        [key],
      );
      return result.rows[0]?.held === true;
    },
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
    createSessionFaultDriver(fault: SessionFault) {
      let sent = 0;
      const texts: string[] = [];
      // Serial: statement N+1 of a connection waits for N, so none overtakes the ending of the
      // sessions before N (the adapter's empty first statement is not awaited before the next).
      const made = own(12, "rowclaim-fault-pool", {
        serial: true,
        async before(watched, text) {
          sent += 1;
          texts.push(text);
          if (sent !== fault.killAt) return;
          const pids = [...made.out].map((out) => out.pid).filter((pid): pid is number => pid !== undefined);
          if (watched.pid === undefined) {
            const [row] = await watched.reserved.unsafe("SELECT pg_backend_pid() AS pid");
            pids.push(Number(row?.pid));
          }
          // Only the fault pool's own sessions: a pid the server has since given another session is left alone.
          await admin.query(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND application_name = 'rowclaim-fault-pool'",
            [pids],
          );
        },
      });
      return {
        driver: make({ sql: made.sql, notify: true }),
        statements: () => sent,
        sent: () => texts,
        end: () => made.sql.end({ timeout: 5 }),
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
      refuses: (table) => table.form === "advisory" || table.fifo,
    },
    childDriverModule: fileURLToPath(new URL("./child-driver.mjs", import.meta.url)),
    close: async () => {
      await Promise.allSettled(ended.map((sql) => sql.end({ timeout: 5 })));
      await adminJs.end({ timeout: 5 });
      await admin.end();
    },
  };
}
