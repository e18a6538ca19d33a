/**
 * The conformance harness of the in-memory reference driver, shared by `memory-conformance.test.ts`
 * (the suite on the driver) and `memory-broken.test.ts` (the suite failing deliberately broken
 * variants of it). Every hook reads the memory database directly, as a second connection would.
 */
import type { Driver, RowId, TableDefinition } from "@rowclaim/core";
import type { ConformanceHarness, UserPoolDriver } from "../src/harness.js";
import {
  createMemoryDriver,
  executeSql,
  MemoryDatabase,
  type MemoryDriver,
  type MemoryOptionalMethod,
  MemoryPool,
  MemoryTransaction,
} from "../src/memory/index.js";

/** What {@link memoryHarness} takes. */
export interface MemoryHarnessOptions {
  /** The report's name. */
  readonly name: string;
  /** Which pool the suite's brokers run on. */
  readonly pools?: "driver" | "user";
  /** Changes every driver the harness makes (a deliberately broken variant); default: none. */
  readonly wrap?: (driver: MemoryDriver) => Driver;
  /** Tests this run opts out of, by name, each with the reason the report shows. */
  readonly skip?: Readonly<Record<string, string>>;
  /** Rows the memory test drains. */
  readonly memoryRows?: number;
  /** Optional claimer methods the drivers leave out (`createMemoryDriver({ without })`); default none. */
  readonly without?: readonly MemoryOptionalMethod[];
}

/** A harness on a new memory database, with every hook the memory database can answer. */
export function memoryHarness(options: MemoryHarnessOptions): ConformanceHarness & {
  readonly database: MemoryDatabase;
} {
  const database = new MemoryDatabase();
  const wrap = options.wrap ?? ((driver: MemoryDriver): Driver => driver);
  const without = options.without ?? [];
  return {
    name: options.name,
    database,
    ...(options.pools === undefined ? {} : { pools: options.pools }),
    ...(options.skip === undefined ? {} : { skip: options.skip }),
    ...(options.memoryRows === undefined ? {} : { memoryRows: options.memoryRows }),
    createDriver: () => wrap(createMemoryDriver({ database, without })),
    createUserPoolDriver(): UserPoolDriver {
      const pool = new MemoryPool();
      return {
        driver: wrap(createMemoryDriver({ database, pool, without })),
        checkedOut: () => pool.checkedOut,
        end: async () => pool.end(),
      };
    },
    execute: async (sql) => executeSql(database, sql),
    readRows: async (table) => database.rows(table),
    dropTable: async (table) => database.dropTable(table.name, table.schema),
    async claimIsolation(table: TableDefinition, id: RowId): Promise<string> {
      const holder = database.rowLockHolder(table, id);
      if (!(holder instanceof MemoryTransaction)) {
        throw new Error(`No row lock transaction holds row ${String(id)} of "${table.name}".`);
      }
      return holder.isolation;
    },
    async holdRowLock(table: TableDefinition, id: RowId) {
      const lock = database.holdRowLock(table, id);
      return { release: async () => lock.release() };
    },
    advisoryKeyHeld: async (key) => database.keyHeld(key),
    async refuseProcessedAt(table: TableDefinition, only?: RowId) {
      const allow = database.refuseNonNull(table, "processed_at", only);
      return async () => allow();
    },
  };
}
