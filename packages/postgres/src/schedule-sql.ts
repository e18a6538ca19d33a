/**
 * The SQL of the schedule ledger (`rowclaim_schedule_ticks`): its schema, the tick's
 * insert-or-ignore, the reads and the prune.
 *
 * @module
 */
import { SCHEDULE_LEDGER_TABLE, type ScheduleLedgerStatements } from "@rowclaim/core/driver";
import { quoteIdent } from "./sql.js";

/** The ledger table's reference in `schema` (or the search path's when `undefined`). */
export function ledgerRef(schema: string | undefined): string {
  const name = quoteIdent(SCHEDULE_LEDGER_TABLE);
  return schema === undefined ? name : `${quoteIdent(schema)}.${name}`;
}

/** The ledger table's `CREATE TABLE IF NOT EXISTS`. */
export function scheduleLedgerSchemaSql(schema: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${ledgerRef(schema)} (
  "table_name" text NOT NULL,
  "schedule_name" text NOT NULL,
  "tick_ms" bigint NOT NULL,
  "published_at" timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY ("table_name", "schedule_name", "tick_ms")
);
`;
}

/** The ledger's statements in `schema` (`$1` table name, `$2` schedule name, `$3` tick in epoch milliseconds; `exists`: `$1` the reference text, a `present` boolean). */
export function scheduleLedgerSql(schema: string | undefined): ScheduleLedgerStatements {
  const ref = ledgerRef(schema);
  const own = `"table_name" = $1 AND "schedule_name" = $2`;
  return {
    exists: "SELECT to_regclass($1) IS NOT NULL AS present",
    recordTick: `INSERT INTO ${ref} ("table_name", "schedule_name", "tick_ms") VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    lastTick: `SELECT max("tick_ms") AS tick_ms FROM ${ref} WHERE ${own}`,
    prune: `DELETE FROM ${ref} WHERE ${own} AND "tick_ms" < $3 AND "tick_ms" < (SELECT max("tick_ms") FROM ${ref} WHERE ${own})`,
    list: `SELECT "schedule_name", max("tick_ms") AS last_tick_ms, count(*) AS ticks FROM ${ref} WHERE "table_name" = $1 GROUP BY "schedule_name" ORDER BY "schedule_name"`,
  };
}
