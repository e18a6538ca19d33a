/**
 * The read-only statements of the SQLite status reader (`queue-status.ts`). In work, per form:
 * lease, `lockedUntil` (epoch milliseconds) after `@now`; advisory, the first open row in claim
 * order of each key in `@held` (a JSON array of the keys this process holds on the file: SQLite
 * has no advisory locks, the driver keeps them in the process). Counts read at most `@cap` rows
 * each. Identifiers go through {@link quoteIdentifier}; values are named parameters.
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

/** The distinct groups (`grp`), or `undefined` for a table without a group column. */
export function statusGroupsSql(table: TableDefinition): string | undefined {
  const { group } = table.columns;
  if (group === undefined) return undefined;
  return `SELECT DISTINCT CAST(${quoteIdentifier(group)} AS TEXT) AS grp FROM ${quoteColumns(table).table}`;
}

/**
 * One group's counts (`@now`, `@cap` the cap plus one, `@group`, `@inWork` a JSON array of the
 * ids in work for the advisory form): `due`, `delayed`, `in_work`, `open`, `processed`,
 * `oldest_due_at`. With `dead`, the group is the dead-letter group: `open` counts its unprocessed
 * rows, the other open figures are 0.
 */
export function statusCountSql(table: TableDefinition, filter: GroupFilter, dead: boolean): string {
  const c = quoteColumns(table);
  const from = `FROM ${c.table}`;
  const count = (conditions: readonly string[]): string =>
    `(SELECT COUNT(*) FROM (SELECT 1 ${from}${where(conditions)} LIMIT @cap))`;
  const open = openConditions(table, filter);
  const working =
    table.form === "lease"
      ? c.lockedUntil === undefined
        ? "0"
        : `COALESCE(${c.lockedUntil} > @now, 0)`
      : `${c.id} IN (SELECT value FROM json_each(@inWork))`;
  const due = c.runAt === undefined ? [] : [`(${c.runAt} IS NULL OR ${c.runAt} <= @now)`];
  const items: string[] = [];
  if (dead)
    items.push("0 AS due", "0 AS delayed", "0 AS in_work", `${count(open)} AS open`, "NULL AS oldest_due_at");
  else {
    items.push(`${count([...open, `NOT (${working})`, ...due])} AS due`);
    items.push(
      c.runAt === undefined
        ? "0 AS delayed"
        : `${count([...open, `NOT (${working})`, `${c.runAt} > @now`])} AS delayed`,
    );
    items.push(`${count([...open, working])} AS in_work`, "0 AS open");
    items.push(
      c.runAt === undefined
        ? "NULL AS oldest_due_at"
        : `(SELECT MIN(${c.runAt}) ${from}${where([...open, `NOT (${working})`, ...due])}) AS oldest_due_at`,
    );
  }
  items.push(
    c.processedAt === undefined
      ? "0 AS processed"
      : `${count([...groupConditions(table, filter), `${c.processedAt} IS NOT NULL`])} AS processed`,
  );
  return `SELECT ${items.join(", ")}`;
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
