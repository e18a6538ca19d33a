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
 * Counts read at most `cap + 1` rows each (`LIMIT` inside the count). Identifiers are quoted
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

/** The distinct groups of the table (`grp`), or `undefined` for a table without a group column. */
export function statusGroupsSql(table: TableDefinition): Bound | undefined {
  const { group } = table.columns;
  if (group === undefined) return undefined;
  return {
    sql: `SELECT DISTINCT CAST(${quoter(table)(group)} AS CHAR) AS \`grp\` FROM ${quoteDefinedTable(table)}`,
    values: [],
  };
}

/** What stands for "in work" in the counts. */
export type InWorkCondition =
  /** Lease form: `lockedUntil` after `now`. */
  | { readonly lease: Date }
  /** Row lock and advisory forms: these ids (found by {@link inWorkCandidatesSql} or the probe). */
  | { readonly ids: readonly unknown[] };

/**
 * One group's counts: columns `due`, `delayed`, `in_work`, `open`, `processed` (each at most
 * `cap`), `oldest_due_at`. With `dead`, the group is the dead-letter group: `open` counts its
 * unprocessed rows and the other open figures are 0.
 */
export function statusCountSql(
  table: TableDefinition,
  filter: GroupFilter,
  dead: boolean,
  inWork: InWorkCondition,
  now: Date,
  cap: number,
): Bound {
  const v = new Values();
  const q = quoter(table);
  const from = `FROM ${quoteDefinedTable(table)}`;
  const { runAt, processedAt, lockedUntil, id } = table.columns;
  const count = (conditions: () => string[]): string => {
    const text = `(SELECT COUNT(*) FROM (SELECT 1 ${from}${where(conditions())} LIMIT ${v.add(cap + 1)}) AS rc_c)`;
    return text;
  };
  const working = (): string => {
    if ("lease" in inWork)
      return lockedUntil === undefined
        ? "FALSE"
        : `COALESCE(${q(lockedUntil)} > ${v.add(inWork.lease)}, FALSE)`;
    if (inWork.ids.length === 0) return "FALSE";
    return `${q(id)} IN (${inWork.ids.map((value) => v.add(value)).join(", ")})`;
  };
  const dueTime = (): string[] =>
    runAt === undefined ? [] : [`(${q(runAt)} IS NULL OR ${q(runAt)} <= ${v.add(now)})`];
  const items: string[] = [];
  if (dead) {
    items.push("0 AS `due`", "0 AS `delayed`", "0 AS `in_work`");
    items.push(`${count(() => openConditions(table, filter, v))} AS \`open\``);
    items.push("NULL AS `oldest_due_at`");
  } else {
    items.push(
      `${count(() => [...openConditions(table, filter, v), `NOT (${working()})`, ...dueTime()])} AS \`due\``,
    );
    items.push(
      runAt === undefined
        ? "0 AS `delayed`"
        : `${count(() => [...openConditions(table, filter, v), `NOT (${working()})`, `${q(runAt)} > ${v.add(now)}`])} AS \`delayed\``,
    );
    items.push(`${count(() => [...openConditions(table, filter, v), working()])} AS \`in_work\``);
    items.push("0 AS `open`");
    items.push(
      runAt === undefined
        ? "NULL AS `oldest_due_at`"
        : `(SELECT MIN(${q(runAt)}) ${from}${where([...openConditions(table, filter, v), `NOT (${working()})`, ...dueTime()])}) AS \`oldest_due_at\``,
    );
  }
  items.push(
    processedAt === undefined
      ? "0 AS `processed`"
      : `${count(() => [...groupConditions(table, filter, v), `${q(processedAt)} IS NOT NULL`])} AS \`processed\``,
  );
  return { sql: `SELECT ${items.join(", ")}`, values: v.list };
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
