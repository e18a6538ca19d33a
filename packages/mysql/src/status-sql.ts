/**
 * The read-only statements of the MySQL/MariaDB status reader (`queue-status.ts`). In work, per
 * form:
 *
 * - row lock: neither MariaDB (`information_schema.INNODB_LOCKS` lists only locks someone waits
 *   for) nor MySQL without `performance_schema` lists the row locks a transaction holds, so the
 *   reader probes: it reads the first open rows in claim order, then the same rows
 *   `LOCK IN SHARE MODE SKIP LOCKED` in a READ COMMITTED transaction it rolls back at once; the
 *   rows the second read skips are held by another transaction. Which connection holds them is
 *   not known.
 * - lease: `lockedUntil` after now.
 * - advisory: `IS_USED_LOCK` of each open row's lock name (the claim's own name,
 *   `lockNameExpression`): the connection id holding it; per held name, its first row in claim
 *   order is the one in work.
 *
 * Every group is counted in one grouped pass (the reader caps the figures). Identifiers are quoted
 * with {@link quoteIdentifier}; values travel as `?` parameters, in the order the text reads.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import {
  type Bound,
  claimOrderColumns,
  lockNameExpression,
  quoteDefinedTable,
  quoteIdentifier,
} from "./sql.js";

/** Which group a statement reads: one named group, the rows without one, or the whole table. */
export type GroupFilter = { readonly named: string } | "none" | "all";

class Values {
  readonly list: unknown[] = [];
  add(value: unknown): string {
    this.list.push(value);
    return "?";
  }
}

function quoter(table: TableDefinition): (column: string) => string {
  return (column) => quoteIdentifier(column, table.name);
}

function orderBy(table: TableDefinition): string {
  const q = quoter(table);
  return `ORDER BY ${claimOrderColumns(table)
    .map((column) => q(column))
    .join(", ")}`;
}

/** The condition of the group, if the statement reads one group. */
function groupConditions(table: TableDefinition, filter: GroupFilter, v: Values): string[] {
  const q = quoter(table);
  const { group } = table.columns;
  if (group === undefined || filter === "all") return [];
  return [filter === "none" ? `${q(group)} IS NULL` : `${q(group)} = ${v.add(filter.named)}`];
}

/** The conditions of open rows (unprocessed) of the group. */
function openConditions(table: TableDefinition, filter: GroupFilter, v: Values): string[] {
  const { processedAt } = table.columns;
  const conditions = groupConditions(table, filter, v);
  if (processedAt !== undefined) conditions.push(`${quoter(table)(processedAt)} IS NULL`);
  return conditions;
}

function where(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
}

/** What stands for "in work" in the counts. */
export type InWorkCondition =
  /** Lease form: `lockedUntil` after `now`. */
  | { readonly lease: Date }
  /** Row lock and advisory forms: these ids (found by {@link inWorkCandidatesSql} or the probe). */
  | { readonly ids: readonly unknown[] };

/**
 * Every group's counts in one grouped pass over the table: one row per group, `grp`, `due`,
 * `delayed`, `in_work`, `dead`, `processed`, `oldest_due_at` (exact: the reader caps them). One
 * pass costs far less than a capped count per figure and group, which on 1,000,000 rows read the
 * table many times over.
 */
export function statusCountSql(
  table: TableDefinition,
  deadGroup: string | undefined,
  inWork: InWorkCondition,
  now: Date,
): Bound {
  const v = new Values();
  const q = quoter(table);
  const { runAt, processedAt, lockedUntil, id, group } = table.columns;
  const unprocessed = processedAt === undefined ? "TRUE" : `${q(processedAt)} IS NULL`;
  const inDead = (): string =>
    deadGroup === undefined || group === undefined
      ? "FALSE"
      : `COALESCE(${q(group)} = ${v.add(deadGroup)}, FALSE)`;
  const open = (): string => `${unprocessed} AND NOT ${inDead()}`;
  const working = (): string => {
    if ("lease" in inWork)
      return lockedUntil === undefined
        ? "FALSE"
        : `COALESCE(${q(lockedUntil)} > ${v.add(inWork.lease)}, FALSE)`;
    if (inWork.ids.length === 0) return "FALSE";
    return `${q(id)} IN (${inWork.ids.map((value) => v.add(value)).join(", ")})`;
  };
  const dueTime = (): string =>
    runAt === undefined ? "TRUE" : `(${q(runAt)} IS NULL OR ${q(runAt)} <= ${v.add(now)})`;
  const sum = (condition: string): string => `COALESCE(SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`;
  const grp = group === undefined ? "NULL" : `CAST(${q(group)} AS CHAR)`;
  // Values are added in the order the text reads: build each item left to right.
  const items: string[] = [`${grp} AS \`grp\``];
  items.push(`${sum(`${open()} AND NOT ${working()} AND ${dueTime()}`)} AS \`due\``);
  items.push(
    runAt === undefined
      ? "0 AS `delayed`"
      : `${sum(`${open()} AND NOT ${working()} AND ${q(runAt)} > ${v.add(now)}`)} AS \`delayed\``,
  );
  items.push(`${sum(`${open()} AND ${working()}`)} AS \`in_work\``);
  items.push(`${sum(`${unprocessed} AND ${inDead()}`)} AS \`dead\``);
  items.push(
    processedAt === undefined
      ? "0 AS `processed`"
      : `${sum(`${q(processedAt)} IS NOT NULL`)} AS \`processed\``,
  );
  items.push(
    runAt === undefined
      ? "NULL AS `oldest_due_at`"
      : `MIN(CASE WHEN ${open()} AND NOT ${working()} AND ${dueTime()} THEN ${q(runAt)} END) AS \`oldest_due_at\``,
  );
  const groupBy = group === undefined ? "" : ` GROUP BY ${q(group)}`;
  return { sql: `SELECT ${items.join(", ")} FROM ${quoteDefinedTable(table)}${groupBy}`, values: v.list };
}

/**
 * Rows that may be in work, in claim order, at most `limit`: columns `id`, `grp`, `attempt`,
 * `locked_until`, `lock_name`, `holder` (the connection id holding the advisory lock name).
 * Lease: rows whose lease runs after `now`. Advisory: open rows whose lock name is held (the
 * caller keeps the first row per name). Row lock: the first open rows in claim order, the
 * probe's window (see {@link rowLockProbeSql}).
 */
export function inWorkCandidatesSql(
  table: TableDefinition,
  filter: GroupFilter,
  now: Date,
  limit: number,
): Bound {
  const v = new Values();
  const q = quoter(table);
  const { id, group, attempt, lockedUntil } = table.columns;
  const lock = lockNameExpression(table, q);
  // The lock name's text, its values added where the text reads it.
  const lockName = (): string => {
    let index = 0;
    return lock.sql.replaceAll("?", () => v.add(lock.values[index++]));
  };
  const advisory = table.form === "advisory";
  const items = [
    `${q(id)} AS \`id\``,
    `${group === undefined ? "NULL" : `CAST(${q(group)} AS CHAR)`} AS \`grp\``,
    `${attempt === undefined ? "NULL" : q(attempt)} AS \`attempt\``,
    `${lockedUntil === undefined ? "NULL" : q(lockedUntil)} AS \`locked_until\``,
    `${advisory ? lockName() : "NULL"} AS \`lock_name\``,
    `${advisory ? `IS_USED_LOCK(${lockName()})` : "NULL"} AS \`holder\``,
  ];
  let text = `SELECT ${items.join(", ")} FROM ${quoteDefinedTable(table)}`;
  const conditions = openConditions(table, filter, v);
  if (table.form === "lease")
    conditions.push(lockedUntil === undefined ? "FALSE" : `${q(lockedUntil)} > ${v.add(now)}`);
  if (advisory) conditions.push(`IS_USED_LOCK(${lockName()}) IS NOT NULL`);
  text += `${where(conditions)} ${orderBy(table)} LIMIT ${v.add(limit)}`;
  return { sql: text, values: v.list };
}

/**
 * The row lock probe's second read: the ids of the first `limit` open rows in claim order that no
 * other transaction holds (`LOCK IN SHARE MODE SKIP LOCKED`, run inside a READ COMMITTED
 * transaction the reader rolls back).
 */
export function rowLockProbeSql(table: TableDefinition, filter: GroupFilter, limit: number): Bound {
  const v = new Values();
  const q = quoter(table);
  const conditions = openConditions(table, filter, v);
  return {
    sql: `SELECT ${q(table.columns.id)} AS \`id\` FROM ${quoteDefinedTable(table)}${where(conditions)} ${orderBy(table)} LIMIT ${v.add(limit)} LOCK IN SHARE MODE SKIP LOCKED`,
    values: v.list,
  };
}
