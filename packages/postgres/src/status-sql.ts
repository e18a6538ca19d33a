/**
 * The read-only statements of the PostgreSQL status reader (`queue-status.ts`). In work, per form
 * (DRIVERS.md, "Status"): row lock, the row's `xmax` a running transaction; lease, `lockedUntil`
 * after now; advisory, the first open row of each key held in `pg_locks`.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { ParamSlots, quoteIdent, renderedKey, tableRef } from "./sql.js";

/** A statement and the names of its `$n` parameters, in order. */
export interface StatusStatement {
  readonly text: string;
  readonly params: readonly string[];
}

const alias = "rc_t";

function col(column: string, from: string = alias): string {
  return `${from}.${quoteIdent(column)}`;
}

/** The lock table's `transactionid` entries held now: transactions running now. */
const runningTransactions =
  "SELECT rc_x.transactionid FROM pg_catalog.pg_locks AS rc_x WHERE rc_x.locktype = 'transactionid' AND rc_x.mode = 'ExclusiveLock' AND rc_x.granted";

/** The 64-bit hashes of the advisory keys held now in this database (how the claim takes them). */
const heldAdvisoryHashes =
  "SELECT ((rc_h.classid::bigint << 32) | rc_h.objid::bigint) FROM pg_catalog.pg_locks AS rc_h " +
  "WHERE rc_h.locktype = 'advisory' AND rc_h.objsubid = 1 AND rc_h.granted " +
  "AND rc_h.database = (SELECT rc_d.oid FROM pg_catalog.pg_database AS rc_d WHERE rc_d.datname = current_database())";

/** The condition that joins an advisory entry of `pg_locks` (alias `rc_l`) to a rendered key's hash. */
function advisoryLockOf(key: string): string {
  return (
    "rc_l.locktype = 'advisory' AND rc_l.objsubid = 1 AND rc_l.granted " +
    "AND rc_l.database = (SELECT rc_d.oid FROM pg_catalog.pg_database AS rc_d WHERE rc_d.datname = current_database()) " +
    `AND ((rc_l.classid::bigint << 32) | rc_l.objid::bigint) = hashtextextended(${key}, 0)`
  );
}

function claimOrder(table: TableDefinition, from: string = alias): string {
  const { priority, runAt, id } = table.columns;
  const items: string[] = [];
  if (priority !== undefined) items.push(`${col(priority, from)} ASC`);
  if (runAt !== undefined) items.push(`${col(runAt, from)} ASC NULLS FIRST`);
  items.push(`${col(id, from)} ASC`);
  return items.join(", ");
}

/** Which group a statement reads: a named group (`$group`), the rows without one, or the whole table. */
export type GroupFilter = "named" | "none" | "all";

function groupCondition(
  table: TableDefinition,
  filter: GroupFilter,
  p: ParamSlots,
  from: string = alias,
): string[] {
  const { group } = table.columns;
  if (group === undefined || filter === "all") return [];
  return [filter === "none" ? `${col(group, from)} IS NULL` : `${col(group, from)} = ${p.ref("group")}`];
}

function unprocessed(table: TableDefinition, from: string = alias): string[] {
  const { processedAt } = table.columns;
  return processedAt === undefined ? [] : [`${col(processedAt, from)} IS NULL`];
}

/** The condition "in work now" on rows of the table (alias {@link alias}), already known open. */
function inWork(table: TableDefinition, filter: GroupFilter, p: ParamSlots): string {
  switch (table.form) {
    case "lease": {
      const { lockedUntil } = table.columns;
      return lockedUntil === undefined
        ? "FALSE"
        : `COALESCE(${col(lockedUntil)} > ${p.ref("now")}::timestamptz, FALSE)`;
    }
    case "rowLock":
      return `${alias}.xmax IN (${runningTransactions})`;
    case "advisory": {
      const key = renderedKey(table, "rc_k", p);
      const open = [...unprocessed(table, "rc_k"), ...groupCondition(table, filter, p, "rc_k")];
      const where = open.length === 0 ? "" : ` AND ${open.join(" AND ")}`;
      const first =
        `SELECT DISTINCT ON (${key}) ${col(table.columns.id, "rc_k")} FROM ${tableRef(table)} AS rc_k ` +
        `WHERE hashtextextended(${key}, 0) IN (${heldAdvisoryHashes})${where} ` +
        `ORDER BY ${key}, ${claimOrder(table, "rc_k")}`;
      return `${col(table.columns.id)} IN (${first})`;
    }
  }
}

/**
 * Every group's counts in one grouped pass (cheaper than a capped count per figure; the reader
 * caps them): `grp`, `due`, `delayed`, `in_work`, `dead`, `processed`, `oldest_due_at`.
 */
export function statusCountSql(table: TableDefinition, withDeadGroup: boolean): StatusStatement {
  const p = new ParamSlots();
  const { runAt, processedAt, group } = table.columns;
  const now = (): string => `${p.ref("now")}::timestamptz`;
  const grp = group === undefined ? "NULL::text" : `${col(group)}::text`;
  const unprocessedSql = processedAt === undefined ? "TRUE" : `${col(processedAt)} IS NULL`;
  const inDeadGroup = (): string =>
    withDeadGroup && group !== undefined ? `${col(group)} = ${p.ref("dead")}` : "FALSE";
  const open = (): string => `${unprocessedSql} AND NOT COALESCE(${inDeadGroup()}, FALSE)`;
  const working = (): string => `COALESCE(${inWork(table, "all", p)}, FALSE)`;
  const dueTime = (): string =>
    runAt === undefined ? "TRUE" : `(${col(runAt)} IS NULL OR ${col(runAt)} <= ${now()})`;
  const filter = (condition: string): string => `count(*) FILTER (WHERE ${condition})`;
  const items = [
    `${grp} AS grp`,
    `${filter(`${open()} AND NOT ${working()} AND ${dueTime()}`)} AS due`,
    runAt === undefined
      ? "0 AS delayed"
      : `${filter(`${open()} AND NOT ${working()} AND ${col(runAt)} > ${now()}`)} AS delayed`,
    `${filter(`${open()} AND ${working()}`)} AS in_work`,
    `${filter(`${unprocessedSql} AND COALESCE(${inDeadGroup()}, FALSE)`)} AS dead`,
    processedAt === undefined
      ? "0 AS processed"
      : `${filter(`${col(processedAt)} IS NOT NULL`)} AS processed`,
    runAt === undefined
      ? "NULL::timestamptz AS oldest_due_at"
      : `min(${col(runAt)}) FILTER (WHERE ${open()} AND NOT ${working()} AND ${dueTime()}) AS oldest_due_at`,
  ];
  return {
    text: `SELECT ${items.join(", ")} FROM ${tableRef(table)} AS ${alias}${group === undefined ? "" : ` GROUP BY ${col(group)}`}`,
    params: [...p.names],
  };
}

/** The rows in work in claim order: `id`, `grp`, `attempt`, `locked_until`, `rkey`, `pid` (NULL where unknown). */
export function inWorkListSql(table: TableDefinition, filter: GroupFilter): StatusStatement {
  const p = new ParamSlots();
  const { id, group, attempt, lockedUntil } = table.columns;
  const grp = group === undefined ? "NULL::text" : `${col(group)}::text`;
  const att = attempt === undefined ? "NULL::int" : col(attempt);
  const open = [...groupCondition(table, filter, p), ...unprocessed(table)];
  const where = (more: string): string => [...open, more].join(" AND ");
  const order = claimOrder(table);
  switch (table.form) {
    case "lease": {
      const until = lockedUntil === undefined ? "NULL::timestamptz" : col(lockedUntil);
      return {
        text: `SELECT ${col(id)} AS id, ${grp} AS grp, ${att} AS attempt, ${until} AS locked_until, NULL::text AS rkey, NULL::int AS pid FROM ${tableRef(table)} AS ${alias} WHERE ${where(inWork(table, filter, p))} ORDER BY ${order} LIMIT ${p.ref("limit")}`,
        params: [...p.names],
      };
    }
    case "rowLock":
      return {
        text:
          `SELECT ${col(id)} AS id, ${grp} AS grp, ${att} AS attempt, NULL::timestamptz AS locked_until, NULL::text AS rkey, rc_l.pid AS pid ` +
          `FROM ${tableRef(table)} AS ${alias} JOIN pg_catalog.pg_locks AS rc_l ON rc_l.locktype = 'transactionid' AND rc_l.mode = 'ExclusiveLock' AND rc_l.granted AND rc_l.transactionid = ${alias}.xmax ` +
          `WHERE ${open.length === 0 ? "TRUE" : open.join(" AND ")} ORDER BY ${order} LIMIT ${p.ref("limit")}`,
        params: [...p.names],
      };
    case "advisory": {
      const key = renderedKey(table, alias, p);
      const inner =
        `SELECT DISTINCT ON (${key}) ${col(id)} AS id, ${grp} AS grp, ${att} AS attempt, NULL::timestamptz AS locked_until, ${key} AS rkey, rc_l.pid AS pid, ` +
        `row_number() OVER (ORDER BY ${order}) AS rc_n ` +
        `FROM ${tableRef(table)} AS ${alias} JOIN pg_catalog.pg_locks AS rc_l ON ${advisoryLockOf(key)} ` +
        `WHERE ${open.length === 0 ? "TRUE" : open.join(" AND ")} ORDER BY ${key}, ${order}`;
      return {
        text: `SELECT id, grp, attempt, locked_until, rkey, pid FROM (${inner}) AS rc_w ORDER BY rc_n LIMIT ${p.ref("limit")}`,
        params: [...p.names],
      };
    }
  }
}
