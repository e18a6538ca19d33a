/**
 * What the database-free runtime tests share: a table on a new memory database, a driver on it
 * that records its calls (with a clock the test moves), a broker whose log the test reads, and
 * helpers that change one claimer method, so that a test reaches one path of core's runtimes.
 */
import {
  type Broker,
  type BrokerOptions,
  createBroker,
  type Driver,
  defineTable,
  type TableDefinition,
  type TableDescription,
} from "@rowclaim/core";
import type { Claimer } from "@rowclaim/core/driver";
import { replacingMember, withOpen } from "../src/broken.js";
import {
  createManualClock,
  createMemoryDriver,
  executeSql,
  type ManualClock,
  type MemoryCall,
  MemoryDatabase,
  type MemoryDriver,
  type MemoryDriverOptions,
} from "../src/memory/index.js";

/** The time every test's clock starts at. */
export const START = new Date("2030-01-01T00:00:00Z");

/** One log line the broker wrote. */
export interface Logged {
  readonly level: "error" | "warn" | "debug";
  readonly message: string;
  readonly err: unknown;
}

/** What {@link setUp} makes. */
export interface SetUp {
  readonly table: TableDefinition;
  readonly database: MemoryDatabase;
  readonly clock: ManualClock;
  readonly driver: MemoryDriver;
  /** The driver's calls so far. */
  readonly calls: MemoryCall[];
  /** How many calls of `method` the driver made. */
  count(method: string): number;
  /** What the brokers made by {@link SetUp.broker} logged (debug traces too). */
  readonly logged: Logged[];
  /** A broker on `driver` (default: the memory driver), on the test's clock, logging into `logged`. */
  broker(options?: Partial<BrokerOptions>, driver?: Driver): Broker;
  /** The stored rows of the table. */
  rows(): Record<string, unknown>[];
}

/** A table of `description` on a new memory database, and a recording driver on it. */
export function setUp(description: TableDescription, options: MemoryDriverOptions = {}): SetUp {
  const table = defineTable(description);
  const database = new MemoryDatabase();
  const calls: MemoryCall[] = [];
  const clock = createManualClock(START);
  const driver = createMemoryDriver({ database, clock, onCall: (call) => calls.push(call), ...options });
  executeSql(database, driver.schemaSql(table));
  const logged: Logged[] = [];
  const log =
    (level: Logged["level"]) =>
    (message: string, details?: Record<string, unknown>): void => {
      logged.push({ level, message, err: details?.err });
    };
  return {
    table,
    database,
    clock,
    driver,
    calls,
    logged,
    count: (method) => calls.filter((call) => call.method === method).length,
    broker: (brokerOptions = {}, on = driver) =>
      createBroker({
        driver: on,
        clock: clock.asFunction,
        clockSkew: false,
        logger: { error: log("error"), warn: log("warn"), debug: log("debug") },
        ...brokerOptions,
      }),
    rows: () => database.rows(table),
  };
}

/** Changes, behind the broker's back, every stored row of `t`'s table that `change` returns changes for. */
export function changeRows(
  t: SetUp,
  change: (row: Readonly<Record<string, unknown>>) => Record<string, unknown> | undefined,
): void {
  const rows = t.database.tableOf(t.table)?.rows;
  for (const [key, row] of rows ?? []) {
    const changes = change(row);
    if (changes !== undefined) rows?.set(key, { ...row, ...changes });
  }
}

/** `driver` with one method of every claimer it opens replaced by what `replace` returns for it. */
export function replacingClaimerMethod<C extends Claimer>(
  driver: Driver,
  method: string,
  replace: (claimer: C) => unknown,
): Driver {
  return withOpen(driver, async (table, options) => {
    const claimer = (await driver.open(table, options)) as C;
    return replacingMember(claimer, method, replace(claimer));
  });
}

/** A promise and its resolve, for a test to hold a handler or a call until it says so. */
export function deferred<T = void>(): { readonly promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}
