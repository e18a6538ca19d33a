/**
 * The SQL of the SQLite schedule ledger (`rowclaim_schedule_ticks`, see `@rowclaim/core`'s
 * `schedule-ledger.ts`): its `CREATE TABLE`, the tick's insert-or-ignore (`INSERT OR IGNORE`),
 * and the reads and prune. Every identifier is quoted with {@link quoteIdentifier}; values travel
 * as `?` parameters.
 *
 * @module
 */
import { SCHEDULE_LEDGER_TABLE } from "@rowclaim/core/driver";
import { qualifiedTable } from "./sql.js";

/** The ledger table's reference in attached database `schema` (SQLite's search order when `undefined`). */
export function ledgerRef(schema: string | undefined): string {
  return qualifiedTable(SCHEDULE_LEDGER_TABLE, schema);
}

/** The ledger table's `CREATE TABLE IF NOT EXISTS` (ticks as INTEGER epoch milliseconds). */
export function scheduleLedgerSchemaSql(schema: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${ledgerRef(schema)} (
  "table_name" TEXT NOT NULL,
  "schedule_name" TEXT NOT NULL,
  "tick_ms" INTEGER NOT NULL,
  "published_at" TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY ("table_name", "schedule_name", "tick_ms")
) WITHOUT ROWID;
`;
}

/** The statements of one ledger (parameters `@table`, `@schedule`, `@tick` in epoch milliseconds). */
export interface ScheduleLedgerStatements {
  /** One row when the ledger exists (parameters `@ledger`, its name, and `@schema`, or NULL). */
  readonly exists: string;
  /** Records a tick; changes one row when it was not recorded yet. */
  readonly recordTick: string;
  /** One row: `tick_ms`, the schedule's latest tick (NULL when none). */
  readonly lastTick: string;
  /** Deletes the schedule's ticks before `@tick`, keeping its latest. */
  readonly prune: string;
  /** `schedule_name`, `last_tick_ms`, `ticks` of every schedule of the table. */
  readonly list: string;
}

/** The ledger's statements in `schema`. */
export function scheduleLedgerSql(schema: string | undefined): ScheduleLedgerStatements {
  const ref = ledgerRef(schema);
  const own = `"table_name" = @table AND "schedule_name" = @schedule`;
  return {
    exists: "SELECT 1 AS present FROM pragma_table_info(@ledger, @schema) LIMIT 1",
    recordTick: `INSERT OR IGNORE INTO ${ref} ("table_name", "schedule_name", "tick_ms") VALUES (@table, @schedule, @tick)`,
    lastTick: `SELECT max("tick_ms") AS tick_ms FROM ${ref} WHERE ${own}`,
    prune: `DELETE FROM ${ref} WHERE ${own} AND "tick_ms" < @tick AND "tick_ms" < (SELECT max("tick_ms") FROM ${ref} WHERE ${own})`,
    list: `SELECT "schedule_name", max("tick_ms") AS last_tick_ms, count(*) AS ticks FROM ${ref} WHERE "table_name" = @table GROUP BY "schedule_name" ORDER BY "schedule_name"`,
  };
}
