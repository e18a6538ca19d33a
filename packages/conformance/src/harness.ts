/**
 * What a driver's test file hands the conformance suite: how to make the driver under test (on
 * a pool it owns, and on one the harness owns), how to create and read a table on a connection
 * of the test's own, how a child process makes the same driver (for the crash tests), and the
 * optional hooks that read from the server what a driver could otherwise get wrong unseen (the
 * isolation level of a claim, a row held locked elsewhere, an advisory key left held, a server
 * below the version floor).
 *
 * @module
 */
import type { Driver, IsolationLevel, RowId, TableDefinition } from "@rowclaim/core";

/**
 * A driver on a pool (or database handle) the harness owns, as a user passes one with
 * `{ pool }`: the driver must leave it open at `close()`, so whatever the driver leaves behind
 * (a connection never returned, a key never unlocked) stays there for the suite to find.
 */
export interface UserPoolDriver {
  /** The driver, made on the harness's pool. */
  readonly driver: Driver;
  /**
   * How many of the pool's connections are checked out right now (in use by the driver, not
   * idle in the pool). After `broker.close()` returns it must be 0.
   */
  checkedOut(): number | Promise<number>;
  /** Ends the pool (the user's job, never the driver's). The suite calls it once the test is over. */
  end(): Promise<void>;
}

/** A row lock a harness holds in a transaction of its own, until {@link HeldRowLock.release}. */
export interface HeldRowLock {
  /** Ends the transaction (rolling back) and returns its connection. */
  release(): Promise<void>;
}

/**
 * A driver that takes the server for a release older than the driver's floor, for the
 * `SERVER_TOO_OLD` test: the built-in drivers take an `assumeServerVersion` option for this.
 */
export interface OlderServer {
  /** The version the driver is told the server is, for the report (for example `"10.0"`). */
  readonly version: string;
  /** Makes a driver that believes the server is {@link OlderServer.version}. */
  createDriver(): Driver | Promise<Driver>;
  /**
   * Whether the driver must refuse `table` at that version (for example: PostgreSQL 10 refuses the
   * advisory lock form and FIFO groups and takes the rest; MySQL 8.0.0 refuses every table).
   */
  refuses(table: TableDefinition): boolean;
}

/**
 * A statement an observed driver is about to send (see {@link
 * ConformanceHarness.createObservedDriver}).
 */
export interface ObservedStatement {
  /** The statement's SQL text, as the driver sends it. */
  readonly sql: string;
  /** The connection (session) that sends it: one number for every statement of one connection. */
  readonly connection: number;
}

/**
 * What the suite watches an observed driver's statements with, and how it holds one back: the
 * interleaving tests pause a claim between two of its statements, settle its row from elsewhere
 * there, then let the claim go on.
 */
export interface StatementObserver {
  /**
   * Called before each statement the driver sends. The statement is sent once the returned
   * promise (if any) settles, and every later statement of the same connection waits behind it,
   * so a pause never reorders a connection's statements.
   */
  before(statement: ObservedStatement): void | Promise<void>;
  /** Called once the statement's answer (or its error) came back, with the object `before` got. */
  after(statement: ObservedStatement): void;
}

/**
 * A driver on a pool of a size the suite chooses, for the tests of what a driver does when the
 * pool is too small for a subscription or has no connection to spare.
 */
export interface SizedPoolDriver extends UserPoolDriver {
  /**
   * Checks out every connection of the pool (as an application holding them all would) and keeps
   * them until the returned function is called, which gives them back.
   */
  holdAll(): Promise<() => Promise<void>>;
}

/**
 * A driver on a pool the harness owns that counts the statements the driver sends and, at the
 * statement the suite names, has the server end the driver's sessions, as a restart, a failover
 * or a connection kill would: for the start-up fault tests ({@link ConformanceHarness.createSessionFaultDriver}).
 */
export interface SessionFaultDriver {
  /** The driver, made on the harness's pool. */
  readonly driver: Driver;
  /** How many statements the driver sent through the pool so far, on any of its connections. */
  statements(): number;
  /**
   * The text of every statement the driver sent through the pool so far, in order (optional).
   * With it, the start-up sub-suite's sampled tests end the sessions before the first statement
   * of each kind only (the same statement again, with other names or values, is the same kind);
   * without it, every statement counts as a kind of its own.
   */
  sent?(): readonly string[];
  /** Ends the pool (the suite calls it once the test is over, after the broker closed). */
  end(): Promise<void>;
}

/** Where a {@link SessionFaultDriver} ends the driver's sessions. */
export interface SessionFault {
  /**
   * The statement (counting from 1, every statement the driver sends through the pool, on any
   * connection) just before which the server ends every session of the pool checked out at that
   * moment, the one the statement goes to included; the statement is then sent on its dead
   * connection. Once only: later statements run normally. Unset: no session is ended (the suite
   * counts a start-up's statements so).
   */
  readonly killAt?: number;
}

/** A TCP address of the database server. */
export interface ServerAddress {
  readonly host: string;
  readonly port: number;
}

/** The driver under test, as the conformance suite sees it. */
export interface ConformanceHarness {
  /** A name for the report, for example `"postgres"`. */
  readonly name: string;
  /**
   * Makes a new driver (each broker in a test gets its own; the suite closes each through
   * `broker.close()`). It should open connections of its own, not share the harness's.
   */
  createDriver(): Driver | Promise<Driver>;
  /**
   * Runs one or more SQL statements (the driver's `schemaSql` output, `DROP TABLE …`) on a
   * connection of the harness's own, outside any broker.
   */
  execute(sql: string): Promise<void>;
  /**
   * Reads every row of `table` (every column, by column name as the client returns them),
   * ordered by id, on a connection of the harness's own: what "seen from a second connection"
   * means in the suite.
   */
  readRows(table: TableDefinition): Promise<Record<string, unknown>[]>;
  /** Drops `table` if it exists (quoted as the dialect quotes). */
  dropTable(table: TableDefinition): Promise<void>;
  /**
   * For the crash tests: an absolute file URL or path of an ES module (plain JavaScript, it runs
   * in a child `node` process) that exports `createDriver(): Driver | Promise<Driver>`, making
   * the same driver against the same database as {@link ConformanceHarness.createDriver}.
   * Without it the crash tests skip, saying so. For the transactional handler tests it also
   * exports `insertSideRow(client, table, job, worker)` (and `transactionBodies = "sync"` where
   * bodies must be synchronous): see `TransactionalDriverModule`.
   */
  readonly childDriverModule?: string;
  /**
   * For the transactional publish test (drivers whose capabilities say `transactionalPublish`):
   * opens a transaction on a connection of the harness's own, other than the one
   * {@link ConformanceHarness.readRows} reads on (the suite reads the table while the
   * transaction is open and must not see its rows yet), calls `body` with the client a user
   * would pass as `publish(table, payload, { client })`, then commits, or rolls back when
   * `options.rollback` is true (also when `body` throws, rethrowing). Optional: without it that
   * test skips, saying so.
   */
  inTransaction?(
    body: (client: unknown) => Promise<void>,
    options: { readonly rollback: boolean },
  ): Promise<void>;
  /**
   * Where every table of the suite's starts its name: lower-case letters, digits and `_`,
   * starting with a letter, at most 16 characters. Default `"rc_"`. Give each harness of one
   * database its own (tables, and the advisory keys that start with their names, then never meet).
   */
  readonly tablePrefix?: string;
  /**
   * For the pool ownership tests (and {@link ConformanceHarness.pools}): makes a driver on a pool
   * the harness owns, one new pool per call. Without it those tests skip, saying so.
   */
  createUserPoolDriver?(): UserPoolDriver | Promise<UserPoolDriver>;
  /**
   * Which pool the brokers of every test run on: `"driver"` (default: {@link
   * ConformanceHarness.createDriver}, a pool the driver makes and ends) or `"user"` ({@link
   * ConformanceHarness.createUserPoolDriver}, a pool the harness owns, ended after the test, so a
   * connection or a lock a driver leaves behind is still there for the next broker to meet).
   */
  readonly pools?: "driver" | "user";
  /**
   * For the isolation tests of the row lock form: reads from the server the isolation level of
   * the transaction that holds row `id` of `table` locked (a row lock claim's transaction, open
   * while its handler runs), as lower-case words (`"read committed"`). PostgreSQL:
   * `current_setting('transaction_isolation')` on the session whose transaction locked the row;
   * MySQL/MariaDB: `information_schema.INNODB_TRX.trx_isolation_level` of the transaction that
   * blocks a `SELECT … FOR UPDATE` of the row. Without it those tests skip, saying so.
   */
  claimIsolation?(table: TableDefinition, id: RowId): Promise<IsolationLevel | string>;
  /**
   * For the contention tests: opens a transaction on a connection of the harness's own, locks row
   * `id` of `table` with `SELECT … FOR UPDATE`, and keeps it until the returned lock is released.
   * A claim that does not skip locked rows waits behind it. Without it those tests skip, saying so.
   */
  holdRowLock?(table: TableDefinition, id: RowId): Promise<HeldRowLock>;
  /**
   * For the advisory tests: whether any session of the server holds the advisory lock of `key`
   * (the key as the table's template renders it), asked from a session of the harness's own.
   * PostgreSQL: `pg_locks`; MySQL/MariaDB: `IS_USED_LOCK(name)`. Without it those tests check
   * only that a broker on another pool takes the key's row.
   */
  advisoryKeyHeld?(key: string): Promise<boolean>;
  /**
   * For the interleaving tests: makes a driver (as {@link ConformanceHarness.createDriver} does,
   * without LISTEN) whose every statement goes through `observer` first: `observer.before` sees
   * the statement's SQL text and connection, and may hold the statement back; `observer.after`
   * sees its answer arrive. The suite recognises statements by their shape (a key's lock, a
   * take, a claim: see the interleavings sub-suite) and pauses one to run a competing
   * settlement before it goes on. A wrapper around the pool the driver is given is enough
   * (`pool.connect`/`getConnection` and each connection's `query`). Without it those tests
   * skip, saying so; a driver whose claims run synchronously (SQLite) has no gap to pause in.
   */
  createObservedDriver?(observer: StatementObserver): Driver | Promise<Driver>;
  /**
   * For the pool tests: makes a driver on a new pool of the harness's own holding at most
   * `options.max` connections, told to wait at most `options.acquireTimeoutMs` for one (the
   * first-party drivers: `acquireTimeoutMs`). Without it those tests skip, saying so.
   */
  createSizedPoolDriver?(options: {
    readonly max: number;
    readonly acquireTimeoutMs: number;
  }): SizedPoolDriver | Promise<SizedPoolDriver>;
  /**
   * For the start-up fault tests: makes a driver on a new pool of the harness's own that ends the
   * driver's sessions at the statement {@link SessionFault.killAt} names (PostgreSQL:
   * `pg_terminate_backend` of every checked-out client's backend; MySQL/MariaDB: `KILL
   * CONNECTION`). Without it those tests skip, saying so (an embedded database has no session
   * to lose).
   */
  createSessionFaultDriver?(fault: SessionFault): SessionFaultDriver | Promise<SessionFaultDriver>;
  /**
   * For the start-up retry test: where the database server listens (TCP), and how to make the
   * driver under test on another address that forwards to it (the suite's own proxy, which
   * refuses connections at first). Without it that test skips, saying so.
   */
  readonly serverAddress?: ServerAddress;
  /** For the start-up retry test: makes a driver like {@link ConformanceHarness.createDriver} that connects to `address` instead. */
  createDriverAt?(address: ServerAddress): Driver | Promise<Driver>;
  /** For the `SERVER_TOO_OLD` test; without it that test skips, saying so. */
  readonly olderServer?: OlderServer;
  /**
   * For the failed-settlement tests of the settlements sub-suite: makes the database refuse, from
   * now until the returned function is called, every statement that sets `processedAt` of a row of
   * `table` to a value (the suite's tables name it `processed_at`), so that an ack fails for a
   * database reason while claims still work. PostgreSQL and MySQL/MariaDB: a `CHECK
   * (processed_at IS NULL)` constraint, dropped again; SQLite: a `BEFORE UPDATE` trigger that
   * raises. The suite calls it before any broker subscribes to `table`, and the returned
   * function after every broker of it closed. Without it those tests skip, saying so.
   *
   * With `only`, refuses it for row `only` alone (the poison row tests): PostgreSQL a `CHECK
   * (processed_at IS NULL OR id <> only)`; MySQL/MariaDB (whose CHECK cannot name an
   * `AUTO_INCREMENT` column) and SQLite a `BEFORE UPDATE` trigger that raises for that row.
   */
  refuseProcessedAt?(table: TableDefinition, only?: RowId): Promise<() => Promise<void>>;
  /**
   * How many rows the memory test drains through one subscription (default 100,000). Lower it for
   * a driver too slow to drain that many within the test's timeout, and say so in the driver's
   * README.
   */
  readonly memoryRows?: number;
  /** Releases what the harness holds (its own connection). Called once, after every test. */
  close?(): Promise<void>;
  /**
   * Tests the driver opts out of, by test name, each with the reason the report shows. A test
   * named here that does not exist fails the suite, so a stale opt-out is noticed.
   */
  readonly skip?: Readonly<Record<string, string>>;
}
