/**
 * Every SQL statement the command line runs itself (outside the drivers), for each dialect:
 * identifier quoting, dropping a table, listing a table's columns, and the `status` counts.
 * Identifiers are always quoted; values always travel as parameters.
 *
 * @module
 */
import type { Dialect } from "./target.js";

/** Quotes an identifier for `dialect`, doubling any embedded quote character. */
export function quoteIdentifier(dialect: Dialect, name: string): string {
  if (dialect === "mysql") return `\`${name.replaceAll("`", "``")}\``;
  return `"${name.replaceAll('"', '""')}"`;
}

/** `DROP TABLE IF EXISTS` for `table`. */
export function dropTableSql(dialect: Dialect, table: string): string {
  return `DROP TABLE IF EXISTS ${quoteIdentifier(dialect, table)}`;
}

/** A statement that lists the columns of a table (parameter: the table's name) as rows `{ name }`. */
export function columnListSql(dialect: Dialect): string {
  switch (dialect) {
    case "sqlite":
      return "SELECT name AS name FROM pragma_table_info(?)";
    case "postgres":
      return "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position";
    case "mysql":
      return "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position";
  }
}

/** The columns of a table the `status` counts read; absent roles are left out. */
export interface StatusColumns {
  readonly group?: string;
  readonly runAt?: string;
  readonly processedAt?: string;
  readonly lockedUntil?: string;
}

/** A statement and its parameters. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/**
 * The read-only count statement of `status`: one row per group (`grp`, NULL where the table has
 * no group column) with `total`, `processed`, `leased`, `scheduled` and `due`. `now` is the
 * host's clock, as the drivers compare it; `toParam` turns it into the column's representation.
 *
 * - processed: `processedAt` set;
 * - leased: not processed, `lockedUntil` after now (in work in the lease form);
 * - scheduled: not processed, not leased, `runAt` after now;
 * - due: every other row.
 */
export function statusCountSql(
  dialect: Dialect,
  table: string,
  columns: StatusColumns,
  now: unknown,
): Statement {
  const q = (name: string): string => quoteIdentifier(dialect, name);
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return dialect === "postgres" ? `$${params.length}` : "?";
  };
  // Each condition is a function so that its parameters are pushed in the order the text reads.
  const open = (): string =>
    columns.processedAt === undefined ? "1 = 1" : `${q(columns.processedAt)} IS NULL`;
  const processed = (): string =>
    columns.processedAt === undefined ? "1 = 0" : `${q(columns.processedAt)} IS NOT NULL`;
  const leased = (): string =>
    columns.lockedUntil === undefined ? "1 = 0" : `${open()} AND ${q(columns.lockedUntil)} > ${param(now)}`;
  const notLeased = (): string =>
    columns.lockedUntil === undefined
      ? "1 = 1"
      : `(${q(columns.lockedUntil)} IS NULL OR ${q(columns.lockedUntil)} <= ${param(now)})`;
  const scheduled = (): string =>
    columns.runAt === undefined
      ? "1 = 0"
      : `${open()} AND ${notLeased()} AND ${q(columns.runAt)} > ${param(now)}`;
  const due = (): string =>
    columns.runAt === undefined
      ? `${open()} AND ${notLeased()}`
      : `${open()} AND ${notLeased()} AND (${q(columns.runAt)} IS NULL OR ${q(columns.runAt)} <= ${param(now)})`;
  const count = (condition: () => string): string => `SUM(CASE WHEN ${condition()} THEN 1 ELSE 0 END)`;
  const group = columns.group === undefined ? "NULL" : q(columns.group);
  let sql = `SELECT ${group} AS grp, COUNT(*) AS total, `;
  sql += `${count(processed)} AS processed, `;
  sql += `${count(leased)} AS leased, `;
  sql += `${count(scheduled)} AS scheduled, `;
  sql += `${count(due)} AS due `;
  sql += `FROM ${q(table)}`;
  if (columns.group !== undefined) sql += ` GROUP BY ${group} ORDER BY ${group}`;
  return { sql, params };
}

/**
 * A time as a parameter compared with the drivers' time columns: SQLite's driver stores INTEGER
 * milliseconds since the Unix epoch; PostgreSQL (`timestamptz`) and MySQL (`DATETIME`, read and
 * written in UTC) take a `Date`.
 */
export function timeParam(dialect: Dialect, time: Date): unknown {
  return dialect === "sqlite" ? time.getTime() : time;
}
