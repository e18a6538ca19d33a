/**
 * The SQL of the SQLite driver's control table (`rowclaim_controls`): its `CREATE TABLE`, the
 * read of one table's rows, the pause upsert, and the rate take, one `INSERT … ON CONFLICT DO
 * UPDATE … RETURNING` (it holds the write lock, so no two takes count past the limit).
 *
 * @module
 */
import { CONTROL_TABLE } from "@rowclaim/core/driver";
import { quoteIdentifier } from "./sql.js";

const table = quoteIdentifier(CONTROL_TABLE);

/** The control table's `CREATE TABLE` (times as INTEGER epoch milliseconds, as the driver's own tables). */
export const controlsSchemaSql = `CREATE TABLE IF NOT EXISTS ${table} (
  table_name TEXT NOT NULL,
  scope TEXT NOT NULL,
  paused INTEGER NOT NULL DEFAULT 0,
  paused_at INTEGER,
  rate_window INTEGER,
  rate_count INTEGER NOT NULL DEFAULT 0,
  rate_limit INTEGER,
  rate_interval_ms INTEGER,
  rate_granted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (table_name, scope)
)`;

/** Whether the control table exists: one row when it does. */
export const controlsPresentSql = `SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '${CONTROL_TABLE}'`;

/** Every control row of one table (`@table`). */
export const controlsReadSql = `SELECT scope, paused, rate_window, rate_count, rate_limit, rate_interval_ms FROM ${table} WHERE table_name = @table`;

/** Sets `paused` (`@paused`, 0 or 1) of one scope, creating the row; `@now` the pause's time. */
export const controlsSetPausedSql = `INSERT INTO ${table} (table_name, scope, paused, paused_at)
VALUES (@table, @scope, @paused, CASE WHEN @paused = 1 THEN @now END)
ON CONFLICT (table_name, scope) DO UPDATE SET
  paused_at = CASE WHEN excluded.paused = 1 THEN COALESCE(CASE WHEN paused = 1 THEN paused_at END, excluded.paused_at) END,
  paused = excluded.paused`;

/**
 * Counts up to `@want` rows in window `@window` of one scope, at most `@limit` per window
 * (`@interval` the window's length); returns `rate_granted`, how many it counted. The SET
 * expressions read the row as it was before the statement.
 */
export const controlsTakeRateSql = `INSERT INTO ${table} (table_name, scope, rate_window, rate_count, rate_limit, rate_interval_ms, rate_granted)
VALUES (@table, @scope, @window, MIN(@want, @limit), @limit, @interval, MIN(@want, @limit))
ON CONFLICT (table_name, scope) DO UPDATE SET
  rate_granted = CASE
    WHEN rate_window IS NULL OR rate_window < @window THEN MIN(@want, @limit)
    WHEN rate_window = @window THEN MAX(0, MIN(@want, @limit - rate_count))
    ELSE 0 END,
  rate_count = CASE
    WHEN rate_window IS NULL OR rate_window < @window THEN MIN(@want, @limit)
    WHEN rate_window = @window THEN rate_count + MAX(0, MIN(@want, @limit - rate_count))
    ELSE rate_count END,
  rate_window = MAX(COALESCE(rate_window, @window), @window),
  rate_limit = @limit,
  rate_interval_ms = @interval
RETURNING rate_granted`;

/** Gives back `@count` rows of window `@window` of one scope (no-op once the window moved on). */
export const controlsReturnRateSql = `UPDATE ${table} SET rate_count = MAX(rate_count - @count, 0) WHERE table_name = @table AND scope = @scope AND rate_window = @window`;
