/**
 * The read-only statements of the SQLite status reader (`queue-status.ts`). In work: lease,
 * `lockedUntil` after `@now`; advisory, the first open row in claim order of each key in `@held`
 * (a JSON array of the keys this process holds). Every group is counted in one grouped pass.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { advisoryKeySql, claimOrder, quoteColumns, quoteIdentifier } from "./sql.js";

/** Which group a statement reads: `@group`, the rows without one, or the whole table. */
export type GroupFilter = "named" | "none" | "all";

function groupConditions(table: TableDefinition, filter: GroupFilter): string[] {
  const { group } = table.columns;
  if (group === undefined || filter === "all") return [];
  return [filter === "none" ? `${quoteIdentifier(group)} IS NULL` : `${quoteIdentifier(group)} = @group`];
}

function openConditions(table: TableDefinition, filter: GroupFilter): string[] {
  const { processedAt } = table.columns;
  const conditions = groupConditions(table, filter);
  if (processedAt !== undefined) conditions.push(`${quoteIdentifier(processedAt)} IS NULL`);
  return conditions;
}

function where(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
}

/**
 * Every group's counts in one grouped pass over the table (`@now`, `@dead` the dead-letter group
 * or NULL, `@inWork` a JSON array of the ids in work for the advisory form): one row per group,
 * `grp`, `due`, `delayed`, `in_work`, `dead`, `processed`, `oldest_due_at` (exact: the reader caps them).
 */
export function statusCountSql(table: TableDefinition): string {
  const c = quoteColumns(table);
  const unprocessed = c.processedAt === undefined ? "1" : `${c.processedAt} IS NULL`;
  const inDead = c.group === undefined ? "0" : `COALESCE(${c.group} = @dead, 0)`;
  const open = `${unprocessed} AND NOT ${inDead}`;
  const working =
    table.form === "lease"
      ? c.lockedUntil === undefined
        ? "0"
        : `COALESCE(${c.lockedUntil} > @now, 0)`
      : `${c.id} IN (SELECT value FROM json_each(@inWork))`;
  const due = c.runAt === undefined ? "1" : `(${c.runAt} IS NULL OR ${c.runAt} <= @now)`;
  const sum = (condition: string): string => `COALESCE(SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`;
  const items = [
    `${c.group === undefined ? "NULL" : `CAST(${c.group} AS TEXT)`} AS grp`,
    `${sum(`${open} AND NOT ${working} AND ${due}`)} AS due`,
    c.runAt === undefined
      ? "0 AS delayed"
      : `${sum(`${open} AND NOT ${working} AND ${c.runAt} > @now`)} AS delayed`,
    `${sum(`${open} AND ${working}`)} AS in_work`,
    `${sum(`${unprocessed} AND ${inDead}`)} AS dead`,
    c.processedAt === undefined ? "0 AS processed" : `${sum(`${c.processedAt} IS NOT NULL`)} AS processed`,
    c.runAt === undefined
      ? "NULL AS oldest_due_at"
      : `MIN(CASE WHEN ${open} AND NOT ${working} AND ${due} THEN ${c.runAt} END) AS oldest_due_at`,
  ];
  return `SELECT ${items.join(", ")} FROM ${c.table}${c.group === undefined ? "" : ` GROUP BY ${c.group}`}`;
}

/**
 * Rows that may be in work, in claim order, at most `@limit`: `id`, `grp`, `attempt`,
 * `locked_until`, `rkey`. Lease: leases running after `@now`. Advisory: open rows whose key is
 * in `@held` (the caller keeps the first row per key). The key's literals are `@k0`, `@k1`….
 */
export function inWorkCandidatesSql(table: TableDefinition, filter: GroupFilter): string {
  const c = quoteColumns(table);
  const key = advisoryKeySql(table).sql;
  const conditions = openConditions(table, filter);
  if (table.form === "lease") conditions.push(c.lockedUntil === undefined ? "0" : `${c.lockedUntil} > @now`);
  else conditions.push(`${key} IN (SELECT value FROM json_each(@held))`);
  const items = [
    `${c.id} AS id`,
    `${c.group === undefined ? "NULL" : `CAST(${c.group} AS TEXT)`} AS grp`,
    `${c.attempt ?? "NULL"} AS attempt`,
    `${c.lockedUntil ?? "NULL"} AS locked_until`,
    `${table.form === "advisory" ? key : "NULL"} AS rkey`,
  ];
  return `SELECT ${items.join(", ")} FROM ${c.table}${where(conditions)} ORDER BY ${claimOrder(c)} LIMIT @limit`;
}
