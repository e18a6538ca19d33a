/**
 * {@link createMemoryDriver}: the in-memory reference driver. It implements core's driver
 * contract in every form (row lock, lease, advisory lock), with FIFO groups, advisory keys,
 * lease and key fences, attempts, dead letters and `processedAt`, on a {@link MemoryDatabase}
 * kept in the process, so that core's runtimes and a driver author's expectations can be tested
 * without a server, deterministically. It is never a stand-in for a test on a real database:
 * it has no network, no isolation anomalies, no crash to survive.
 *
 * @module
 */
import {
  ClosedError,
  type Driver,
  InvalidArgumentError,
  isolationLevels,
  type TableDefinition,
} from "@rowclaim/core";
import { type Claimer, type DriverCapabilities, driverCapabilities } from "@rowclaim/core/driver";
import { MemoryAdvisoryClaimer } from "./advisory.js";
import { type MemoryClock, systemClock } from "./clock.js";
import type { ClaimerContext, MemoryCall } from "./context.js";
import { memoryControlStore } from "./controls.js";
import { MemoryLeaseClaimer } from "./lease.js";
import { memoryOperations } from "./operations.js";
import { type MemoryOptionalMethod, withoutCapabilities } from "./optional.js";
import { MemoryPool } from "./pool.js";
import { insertRows } from "./publish.js";
import { memoryStatusReader } from "./queue-status.js";
import { MemoryRowLockClaimer } from "./row-lock.js";
import { memoryScheduleLedger } from "./schedule-ledger.js";
import { checkSchema, schemaSql } from "./schema.js";
import { MemoryDatabase } from "./store.js";
import type { MemoryTransactionClient } from "./transaction-client.js";
import { publishUniqueRows } from "./unique-publish.js";

/** What {@link createMemoryDriver} takes. Every option has a default. */
export interface MemoryDriverOptions {
  /** The database the driver works on; drivers on one database see the same tables. Default: a new one. */
  readonly database?: MemoryDatabase;
  /**
   * A pool the caller owns (left open at `close()`, as a user's `pg.Pool` is), so that a test can
   * count the connections the driver holds. Default: a pool of the driver's own, ended at `close()`.
   */
  readonly pool?: MemoryPool;
  /** The database's clock, read by `databaseTime()`. Default: the machine's clock. */
  readonly clock?: MemoryClock;
  /**
   * One round trip to the database, awaited at the start of every call the driver makes
   * (claim, settle, commit, publish …). Default: `setImmediate`, so a call yields to the event
   * loop as a real one does. Give `() => Promise.resolve()` to stay on the microtask queue.
   */
  readonly roundTrip?: () => Promise<void>;
  /** Told of every call, before its round trip: count round trips with it. */
  readonly onCall?: (call: MemoryCall) => void;
  /** The driver's name, for logs and the conformance report. Default `"memory"`. */
  readonly name?: string;
  /**
   * Optional claimer methods the claimers leave out, as a driver that offers fewer does, so that
   * core's fallbacks run (for example `["claimWithAcks", "settleMany"]`: lease acks go one
   * `settle` each). Default: none; every claimer offers every optional method it has.
   */
  readonly without?: readonly MemoryOptionalMethod[];
}

/** The memory driver: core's `Driver`, plus the database, pool and clock it runs on. */
export interface MemoryDriver extends Driver {
  readonly dialect: "memory";
  /** The database the driver works on. */
  readonly database: MemoryDatabase;
  /** The pool its connections come from. */
  readonly pool: MemoryPool;
  /** The database's clock. */
  readonly clock: MemoryClock;
  databaseTime(): Promise<Date>;
  /** Type only: transactional handler bodies receive a {@link MemoryTransactionClient}. */
  readonly "~transactionClient"?: MemoryTransactionClient;
}

/**
 * What the memory driver offers: every form, FIFO in the row lock and lease forms, every
 * isolation level, transactional handlers in every form (a body gets a `MemoryTransactionClient`).
 */
export const memoryCapabilities: DriverCapabilities = driverCapabilities({
  forms: ["rowLock", "lease", "advisory"],
  transactionalHandlers: ["rowLock", "lease", "advisory"],
  fifo: ["rowLock", "lease"],
  isolationLevels,
  advisoryScope: "database",
  controls: true,
  advisoryLimit: true,
  schedules: true,
});

/** The claimer of the table's form. */
function claimerOf(context: ClaimerContext): Claimer {
  switch (context.table.form) {
    case "rowLock":
      return new MemoryRowLockClaimer(context);
    case "lease":
      return new MemoryLeaseClaimer(context);
    case "advisory":
      return new MemoryAdvisoryClaimer(context);
  }
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Makes an in-memory driver: a reference implementation of core's driver contract, for tests
 * of core's own logic and of what a driver author expects core to ask, without a database.
 * Never a stand-in for a test on a real database.
 *
 * @example
 * import { createMemoryDriver } from "@rowclaim/conformance/memory";
 * const broker = createBroker({ driver: createMemoryDriver() });
 * // driver.database: read and change the tables behind the broker's back
 */
export function createMemoryDriver(options: MemoryDriverOptions = {}): MemoryDriver {
  const database = options.database ?? new MemoryDatabase();
  const pool = options.pool ?? new MemoryPool();
  const ownPool = options.pool === undefined;
  const clock = options.clock ?? systemClock;
  const roundTrip = options.roundTrip ?? nextTurn;
  const name = options.name ?? "memory";
  let closed = false;
  const guard = (doing: string, table: TableDefinition | undefined): void => {
    if (closed) {
      throw new ClosedError(`The ${name} driver was closed; it cannot ${doing}.`, {
        ...(table === undefined ? {} : { table: table.name }),
      });
    }
  };
  const trip = (table: string, method: string): Promise<void> => {
    options.onCall?.({ table, method });
    return roundTrip();
  };
  return {
    name,
    dialect: "memory",
    capabilities: (options.without ?? []).includes("transaction")
      ? driverCapabilities({ ...memoryCapabilities, transactionalHandlers: [] })
      : memoryCapabilities,
    scheduleLedger: memoryScheduleLedger(database, async (table, method) => {
      guard("run a schedule", table);
      await trip(table.name, method);
    }),
    database,
    pool,
    clock,
    controls: memoryControlStore(database, async (method) => {
      guard("read or write the control table", undefined);
      await trip("", method);
    }),
    async open(table, openOptions): Promise<Claimer> {
      guard("open a subscription", table);
      await trip(table.name, "open");
      checkSchema(database, table);
      const context: ClaimerContext = {
        database,
        pool,
        table,
        group: openOptions.group,
        trip: (method) => trip(table.name, method),
      };
      return withoutCapabilities(claimerOf(context), options.without ?? []);
    },
    async publish(table, rows, publishOptions) {
      guard("publish", table);
      if (publishOptions.client !== undefined) {
        throw new InvalidArgumentError(
          `The ${name} driver cannot publish inside a caller's transaction (capabilities.transactionalPublish is false); leave out { client }.`,
          { table: table.name },
        );
      }
      await trip(table.name, "publish");
      return insertRows(database, table, rows);
    },
    async publishUnique(table, rows, publishOptions) {
      guard("publish", table);
      if (publishOptions.client !== undefined) {
        throw new InvalidArgumentError(
          `The ${name} driver cannot publish inside a caller's transaction; leave out { client }.`,
          {
            table: table.name,
          },
        );
      }
      await trip(table.name, "publish");
      return publishUniqueRows(database, table, rows);
    },
    async databaseTime() {
      guard("read the database's clock", undefined);
      await trip("", "databaseTime");
      return clock.now();
    },
    queueStatus: memoryStatusReader(database, (table) => trip(table, "queueStatus")),
    schemaSql: (table) => schemaSql(table),
    operations: memoryOperations(database, trip),
    async close() {
      if (closed) return;
      closed = true;
      if (ownPool) pool.end();
    },
  };
}
