/**
 * What every memory claimer works with: the database, the pool its connections come from, the
 * table and group it claims, and the driver's round trip.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type { MemoryPool } from "./pool.js";
import type { MemoryDatabase, MemoryTable } from "./store.js";

/** One call a memory driver made, as `createMemoryDriver({ onCall })` reports it. */
export interface MemoryCall {
  /** The table's name (`""` for calls that name none). */
  readonly table: string;
  /** The claimer or driver method, for example `"claim"`, `"settle"`, `"commit"`, `"publish"`. */
  readonly method: string;
}

/** What a claimer is opened with. */
export interface ClaimerContext {
  readonly database: MemoryDatabase;
  readonly pool: MemoryPool;
  readonly table: TableDefinition;
  /** The group the subscription claims from. */
  readonly group: string | null;
  /** One round trip: reports the call, then waits as the driver's `roundTrip` says. */
  trip(method: string): Promise<void>;
}

/** The claimer's table as the store has it now (`SchemaError` when it was dropped). */
export function storedTable(context: ClaimerContext, doing: string): MemoryTable {
  return context.database.requireTable(context.table, doing);
}
