/**
 * What a driver's test file hands the conformance suite: how to make the driver under test,
 * how to create and read a table on a connection of the test's own, and how a child process
 * makes the same driver (for the crash tests).
 *
 * @module
 */
import type { Driver, TableDefinition } from "@rowclaim/core";

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
   * Without it the crash tests skip, saying so.
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
  /** Releases what the harness holds (its own connection). Called once, after every test. */
  close?(): Promise<void>;
  /**
   * Tests the driver opts out of, by test name, each with the reason the report shows. A test
   * named here that does not exist fails the suite, so a stale opt-out is noticed.
   */
  readonly skip?: Readonly<Record<string, string>>;
}
