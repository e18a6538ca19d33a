/**
 * The read-only statements of the MySQL/MariaDB status reader (`queue-status.ts`); how each form
 * sees a row in work: DRIVERS.md, "Status". Every group is counted in one grouped pass.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { Builder, q } from "./operations-sql.js";
import { type Bound, claimOrderColumns, lockNameExpression, quoteDefinedTable } from "./sql.js";

/** Which group a statement reads: one named group, the rows without one, or the whole table. */
export type GroupFilter = { readonly named: string } | "none" | "all";

function orderBy(table: TableDefinition): string {
  return `ORDER BY ${claimOrderColumns(table).map(q(table)).join(", ")}`;
}

/** The condition of the group, if the statement reads one group. */
function groupConditions(table: TableDefinition, filter: GroupFilter, v: Builder): string[] {
  const col = q(table);
  const { group } = table.columns;
  if (group === undefined || filter === "all") return [];
  return [filter === "none" ? `${col(group)} IS NULL` : `${col(group)} = ${v.value(filter.named)}`];
}

/** The conditions of open rows (unprocessed) of the group. */
function openConditions(table: TableDefinition, filter: GroupFilter, v: Builder): string[] {
  const { processedAt } = table.columns;
  const conditions = groupConditions(table, filter, v);
  if (processedAt !== undefined) conditions.push(`${q(table)(processedAt)} IS NULL`);
  return conditions;
}

function where(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
}

/** What stands for "in work" in the counts. */
export type InWorkCondition =
  /** Lease form: `lockedUntil` after `now`. */
  | { readonly lease: Date }
  /** Row lock and advisory forms: these ids. */
  | { readonly ids: readonly unknown[] };

/** Every group's counts in one grouped pass: per group `grp`, `due`, `delayed`, `in_work`, `dead`, `processed`, `oldest_due_at`. */
export function statusCountSql(
  table: TableDefinition,
  deadGroup: string | undefined,
  inWork: InWorkCondition,
  now: Date,
): Bound {
  const v = new Builder();
  const col = q(table);
  const { runAt, processedAt, lockedUntil, id, group } = table.columns;
  const unprocessed = processedAt === undefined ? "TRUE" : `${col(processedAt)} IS NULL`;
  const inDead = (): string =>
    deadGroup === undefined || group === undefined
      ? "FALSE"
      : `COALESCE(${col(group)} = ${v.value(deadGroup)}, FALSE)`;
  const open = (): string => `${unprocessed} AND NOT ${inDead()}`;
  const working = (): string => {
    if ("lease" in inWork)
      return lockedUntil === undefined
        ? "FALSE"
        : `COALESCE(${col(lockedUntil)} > ${v.value(inWork.lease)}, FALSE)`;
    if (inWork.ids.length === 0) return "FALSE";
    return `${col(id)} IN (${inWork.ids.map((value) => v.value(value)).join(", ")})`;
  };
  const dueTime = (): string =>
    runAt === undefined ? "TRUE" : `(${col(runAt)} IS NULL OR ${col(runAt)} <= ${v.value(now)})`;
  const sum = (condition: string): string => `COALESCE(SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`;
  const grp = group === undefined ? "NULL" : `CAST(${col(group)} AS CHAR)`;
  // Values are added in the order the text reads: build each item left to right.
  const items: string[] = [`${grp} AS \`grp\``];
  items.push(`${sum(`${open()} AND NOT ${working()} AND ${dueTime()}`)} AS \`due\``);
  items.push(
    runAt === undefined
      ? "0 AS `delayed`"
      : `${sum(`${open()} AND NOT ${working()} AND ${col(runAt)} > ${v.value(now)}`)} AS \`delayed\``,
  );
  items.push(`${sum(`${open()} AND ${working()}`)} AS \`in_work\``);
  items.push(`${sum(`${unprocessed} AND ${inDead()}`)} AS \`dead\``);
  items.push(
    processedAt === undefined
      ? "0 AS `processed`"
      : `${sum(`${col(processedAt)} IS NOT NULL`)} AS \`processed\``,
  );
  items.push(
    runAt === undefined
      ? "NULL AS `oldest_due_at`"
      : `MIN(CASE WHEN ${open()} AND NOT ${working()} AND ${dueTime()} THEN ${col(runAt)} END) AS \`oldest_due_at\``,
  );
  const groupBy = group === undefined ? "" : ` GROUP BY ${col(group)}`;
  return { sql: `SELECT ${items.join(", ")} FROM ${quoteDefinedTable(table)}${groupBy}`, values: v.values };
}

/**
 * Rows that may be in work, in claim order, at most `limit`: `id`, `grp`, `attempt`, `locked_until`,
 * `lock_name`, `holder`. Lease: live leases; advisory: held names; row lock: the probe's window.
 */
export function inWorkCandidatesSql(
  table: TableDefinition,
  filter: GroupFilter,
  now: Date,
  limit: number,
): Bound {
  const v = new Builder();
  const col = q(table);
  const { id, group, attempt, lockedUntil } = table.columns;
  const lock = lockNameExpression(table);
  const lockName = (): string => v.add(lock);
  const advisory = table.form === "advisory";
  const items = [
    `${col(id)} AS \`id\``,
    `${group === undefined ? "NULL" : `CAST(${col(group)} AS CHAR)`} AS \`grp\``,
    `${attempt === undefined ? "NULL" : col(attempt)} AS \`attempt\``,
    `${lockedUntil === undefined ? "NULL" : col(lockedUntil)} AS \`locked_until\``,
    `${advisory ? lockName() : "NULL"} AS \`lock_name\``,
    `${advisory ? `IS_USED_LOCK(${lockName()})` : "NULL"} AS \`holder\``,
  ];
  let text = `SELECT ${items.join(", ")} FROM ${quoteDefinedTable(table)}`;
  const conditions = openConditions(table, filter, v);
  if (table.form === "lease")
    conditions.push(lockedUntil === undefined ? "FALSE" : `${col(lockedUntil)} > ${v.value(now)}`);
  if (advisory) conditions.push(`IS_USED_LOCK(${lockName()}) IS NOT NULL`);
  text += `${where(conditions)} ${orderBy(table)} LIMIT ${v.value(limit)}`;
  return { sql: text, values: v.values };
}

/** The row lock probe's second read: the first `limit` open rows no other transaction holds (`LOCK IN SHARE MODE SKIP LOCKED`). */
export function rowLockProbeSql(table: TableDefinition, filter: GroupFilter, limit: number): Bound {
  const v = new Builder();
  const col = q(table);
  const conditions = openConditions(table, filter, v);
  return {
    sql: `SELECT ${col(table.columns.id)} AS \`id\` FROM ${quoteDefinedTable(table)}${where(conditions)} ${orderBy(table)} LIMIT ${v.value(limit)} LOCK IN SHARE MODE SKIP LOCKED`,
    values: v.values,
  };
}
