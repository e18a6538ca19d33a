/**
 * The SQL of the SQLite schedule ledger (`rowclaim_schedule_ticks`): its `CREATE TABLE`, the
 * tick's `INSERT OR IGNORE`, and the reads and prune, in attached database `schema` (SQLite's
 * search order when `undefined`).
 *
 * @module
 */
import { SCHEDULE_LEDGER_TABLE, type ScheduleLedgerStatements } from "@rowclaim/core/driver";
import { qualifiedTable } from "./sql.js";

/** The ledger table's `CREATE TABLE IF NOT EXISTS` (ticks as INTEGER epoch milliseconds). */
export function scheduleLedgerSchemaSql(schema: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${qualifiedTable(SCHEDULE_LEDGER_TABLE, schema)} (
  "table_name" TEXT NOT NULL,
  "schedule_name" TEXT NOT NULL,
  "tick_ms" INTEGER NOT NULL,
  "published_at" TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY ("table_name", "schedule_name", "tick_ms")
) WITHOUT ROWID;
`;
}

/**
 * The ledger's statements in `schema` (parameters `@table`, `@schedule`, `@tick` in epoch
 * milliseconds; `exists`: `@ledger`, its name, and `@schema`, or NULL, one row when it exists).
 */
export function scheduleLedgerSql(schema: string | undefined): ScheduleLedgerStatements {
  const ref = qualifiedTable(SCHEDULE_LEDGER_TABLE, schema);
  const own = `"table_name" = @table AND "schedule_name" = @schedule`;
  return {
    exists: "SELECT 1 AS present FROM pragma_table_info(@ledger, @schema) LIMIT 1",
    recordTick: `INSERT OR IGNORE INTO ${ref} ("table_name", "schedule_name", "tick_ms") VALUES (@table, @schedule, @tick)`,
    lastTick: `SELECT max("tick_ms") AS tick_ms FROM ${ref} WHERE ${own}`,
    prune: `DELETE FROM ${ref} WHERE ${own} AND "tick_ms" < @tick AND "tick_ms" < (SELECT max("tick_ms") FROM ${ref} WHERE ${own})`,
    list: `SELECT "schedule_name", max("tick_ms") AS last_tick_ms, count(*) AS ticks FROM ${ref} WHERE "table_name" = @table GROUP BY "schedule_name" ORDER BY "schedule_name"`,
  };
}
