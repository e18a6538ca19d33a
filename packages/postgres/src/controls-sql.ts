/**
 * The SQL of the control table (`rowclaim_controls`): its schema, the read, the pause upsert with
 * its NOTIFY, and the rate take, an upsert whose row lock queues the takes of one scope.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { CONTROL_TABLE } from "@rowclaim/core/driver";
import { quoteIdent } from "./sql.js";

const table = quoteIdent(CONTROL_TABLE);

/** The control table's `CREATE TABLE`, in the connection's default schema (the first of `search_path`). */
export const controlsSchemaSql = `CREATE TABLE IF NOT EXISTS ${table} (
  table_name text NOT NULL,
  scope text NOT NULL,
  paused boolean NOT NULL DEFAULT false,
  paused_at timestamptz,
  rate_window bigint,
  rate_count integer NOT NULL DEFAULT 0,
  rate_limit integer,
  rate_interval_ms integer,
  rate_granted integer NOT NULL DEFAULT 0,
  PRIMARY KEY (table_name, scope)
);`;

/** Whether the control table exists where the connection would find it: `present`. */
export const controlsPresentSql = `SELECT to_regclass(${`'${table.replaceAll("'", "''")}'`}) IS NOT NULL AS present`;

/** Every control row of one table (`$1`). */
export const controlsReadSql = `SELECT scope, paused, rate_window, rate_count, rate_limit, rate_interval_ms FROM ${table} WHERE table_name = $1`;

/** Sets `paused` (`$3`) of scope `$2` of table `$1`, creating the row, and NOTIFYs channel `$4` (payload `$1`). */
export const controlsSetPausedSql = `WITH changed AS (
  INSERT INTO ${table} (table_name, scope, paused, paused_at)
  VALUES ($1, $2, $3::boolean, CASE WHEN $3::boolean THEN now() END)
  ON CONFLICT (table_name, scope) DO UPDATE SET paused = EXCLUDED.paused, paused_at = EXCLUDED.paused_at
  RETURNING 1
)
SELECT pg_notify($4, $1) FROM changed`;

/** Counts up to `$5` rows in window `$3` of scope `$2` of table `$1`, at most `$4` a window (`$6` ms long): `rate_granted`. */
export const controlsTakeRateSql = `INSERT INTO ${table} AS c (table_name, scope, rate_window, rate_count, rate_limit, rate_interval_ms, rate_granted)
VALUES ($1, $2, $3::bigint, LEAST($5::int, $4::int), $4::int, $6::int, LEAST($5::int, $4::int))
ON CONFLICT (table_name, scope) DO UPDATE SET
  rate_granted = CASE
    WHEN c.rate_window IS NULL OR c.rate_window < EXCLUDED.rate_window THEN EXCLUDED.rate_granted
    WHEN c.rate_window = EXCLUDED.rate_window THEN GREATEST(0, LEAST($5::int, $4::int - c.rate_count))
    ELSE 0 END,
  rate_count = CASE
    WHEN c.rate_window IS NULL OR c.rate_window < EXCLUDED.rate_window THEN EXCLUDED.rate_count
    WHEN c.rate_window = EXCLUDED.rate_window THEN c.rate_count + GREATEST(0, LEAST($5::int, $4::int - c.rate_count))
    ELSE c.rate_count END,
  rate_window = GREATEST(COALESCE(c.rate_window, EXCLUDED.rate_window), EXCLUDED.rate_window),
  rate_limit = EXCLUDED.rate_limit,
  rate_interval_ms = EXCLUDED.rate_interval_ms
RETURNING rate_granted`;

/** Gives back `$4` rows of window `$3` of scope `$2` of table `$1` (no-op once the window moved on). */
export const controlsReturnRateSql = `UPDATE ${table} SET rate_count = GREATEST(rate_count - $4::int, 0) WHERE table_name = $1 AND scope = $2 AND rate_window = $3::bigint`;

/** The NOTIFY channel of one table's control changes: `rowclaim_c_` and a hash of its key. */
export function controlsChannelFor(tableKey: string): string {
  return `rowclaim_c_${createHash("sha256").update(tableKey).digest("hex").slice(0, 40)}`;
}
