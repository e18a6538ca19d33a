/**
 * The SQL of the control table (`rowclaim_controls`). The rate take is one `INSERT … ON DUPLICATE
 * KEY UPDATE` handing its count back through `LAST_INSERT_ID(expr)` (the header's `insertId`); its
 * assignments run left to right, each reading the row as the ones before it left it.
 *
 * @module
 */
import { CONTROL_TABLE } from "@rowclaim/core/driver";
import { quoteIdentifier } from "./sql.js";

const table = quoteIdentifier(CONTROL_TABLE);

/** The control table's `CREATE TABLE`, in the connection's database. */
export const controlsSchemaSql = `CREATE TABLE IF NOT EXISTS ${table} (
  table_name VARCHAR(255) NOT NULL,
  scope VARCHAR(255) NOT NULL,
  paused BOOLEAN NOT NULL DEFAULT FALSE,
  paused_at DATETIME(3) NULL,
  rate_window BIGINT NULL,
  rate_count INT NOT NULL DEFAULT 0,
  rate_limit INT NULL,
  rate_interval_ms INT NULL,
  rate_granted INT NOT NULL DEFAULT 0,
  PRIMARY KEY (table_name, scope)
) ENGINE=InnoDB`;

/** How many control tables the connection's database holds (0 or 1). */
export const controlsPresentSql = `SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${CONTROL_TABLE}'`;

/** Every control row of one table (`?`): scope, paused, rate_window, rate_count, rate_limit, rate_interval_ms. */
export const controlsReadSql = `SELECT scope, paused, rate_window, rate_count, rate_limit, rate_interval_ms FROM ${table} WHERE table_name = ?`;

/** Sets `paused` of one scope, creating the row. Values: table, scope, paused, paused (again). */
export const controlsSetPausedSql = `INSERT INTO ${table} (table_name, scope, paused, paused_at) VALUES (?, ?, ?, IF(?, NOW(3), NULL))
ON DUPLICATE KEY UPDATE paused_at = IF(paused = ? AND paused_at IS NOT NULL, paused_at, IF(?, NOW(3), NULL)), paused = ?`;

/** The values of {@link controlsSetPausedSql}. */
export function controlsSetPausedValues(tableKey: string, scope: string, paused: boolean): unknown[] {
  return [tableKey, scope, paused, paused, paused, paused, paused];
}

/** Counts up to `want` rows in window `window` of one scope, at most `limit` a window; `insertId` says how many. */
export const controlsTakeRateSql = `INSERT INTO ${table} (table_name, scope, rate_window, rate_count, rate_limit, rate_interval_ms, rate_granted)
VALUES (?, ?, ?, LEAST(?, ?), ?, ?, LAST_INSERT_ID(LEAST(?, ?)))
ON DUPLICATE KEY UPDATE
  rate_granted = LAST_INSERT_ID(CASE
    WHEN rate_window IS NULL OR rate_window < ? THEN LEAST(?, ?)
    WHEN rate_window = ? THEN GREATEST(0, LEAST(?, ? - rate_count))
    ELSE 0 END),
  rate_count = CASE
    WHEN rate_window IS NULL OR rate_window < ? THEN rate_granted
    WHEN rate_window = ? THEN rate_count + rate_granted
    ELSE rate_count END,
  rate_window = GREATEST(COALESCE(rate_window, ?), ?),
  rate_limit = ?,
  rate_interval_ms = ?`;

/** The values of {@link controlsTakeRateSql}, in placeholder order. */
export function controlsTakeRateValues(
  tableKey: string,
  scope: string,
  take: {
    readonly window: number;
    readonly limit: number;
    readonly want: number;
    readonly intervalMs: number;
  },
): unknown[] {
  const { window, limit, want, intervalMs } = take;
  return [
    tableKey,
    scope,
    window,
    want,
    limit,
    limit,
    intervalMs,
    want,
    limit,
    window,
    want,
    limit,
    window,
    want,
    limit,
    window,
    window,
    window,
    window,
    limit,
    intervalMs,
  ];
}

/** Gives back rows of one window (no-op once the window moved on). Values: count, table, scope, window. */
export const controlsReturnRateSql = `UPDATE ${table} SET rate_count = GREATEST(CAST(rate_count AS SIGNED) - ?, 0) WHERE table_name = ? AND scope = ? AND rate_window = ?`;
