/**
 * The SQL of the operations capability on MySQL/MariaDB (DRIVERS.md, "Operations"): nothing waits
 * on a row or key another session holds, and every statement changes at most one batch.
 *
 * @module
 */
import { keyColumnOf, type RowFilter, type RowId, type RowState, type TableDefinition } from "@rowclaim/core";
import { type Bound, lockNameExpression, quoteDefinedTable, quoteIdentifier, quoteTable } from "./sql.js";

/** A statement being built: text pieces and their placeholder values, in order. */
export class Builder {
  readonly values: unknown[] = [];
  /** Appends `sql` and its values; returns `sql`. */
  add(bound: Bound): string {
    this.values.push(...bound.values);
    return bound.sql;
  }
  /** A `?` for `value`. */
  value(value: unknown): string {
    this.values.push(value);
    return "?";
  }
  /** `(?, ?, …)` for `list`. */
  list(list: readonly unknown[]): string {
    this.values.push(...list);
    return `(${list.map(() => "?").join(", ")})`;
  }
}

/** The quoting of `table`'s columns. */
export const q = (table: TableDefinition) => (column: string) => quoteIdentifier(column, table.name);

/** The payload as text, for search. */
function payloadText(table: TableDefinition): string {
  const payload = q(table)(table.columns.payload);
  return table.payloadType === "json" ? `CAST(${payload} AS CHAR)` : payload;
}

/** Unfinished and not in the dead-letter group. */
function queued(table: TableDefinition, b: Builder, deadGroup: string | null): string[] {
  const { processedAt, group } = table.columns;
  const out: string[] = [];
  if (processedAt !== undefined) out.push(`${q(table)(processedAt)} IS NULL`);
  if (group !== undefined && deadGroup !== null)
    out.push(`(${q(table)(group)} IS NULL OR ${q(table)(group)} <> ${b.value(deadGroup)})`);
  return out;
}

/** The selection: ids or keys. */
function selected(
  table: TableDefinition,
  b: Builder,
  selection: { ids: readonly RowId[] } | { keys: readonly string[] },
): string {
  if ("ids" in selection) return `${q(table)(table.columns.id)} IN ${b.list(selection.ids)}`;
  const key = keyColumnOf(table);
  return key === undefined ? "FALSE" : `${q(table)(key)} IN ${b.list(selection.keys)}`;
}

/** The columns a row read selects (in `allColumns` order, for `claimedRowOf`). */
export function selectList(table: TableDefinition): string {
  return table.allColumns.map(q(table)).join(", ");
}

/** The rows of one batch of a row action (the selection, in the scope), read without locking, as `[id, key]`. */
export function actionScopeSql(
  table: TableDefinition,
  selection: { ids: readonly RowId[] } | { keys: readonly string[] },
  scope: "queued" | "any",
  deadGroup: string | null,
): Bound {
  const b = new Builder();
  const key = keyColumnOf(table);
  const where = [selected(table, b, selection), ...(scope === "queued" ? queued(table, b, deadGroup) : [])];
  const sql = `SELECT ${q(table)(table.columns.id)}, ${key === undefined ? "NULL" : `CAST(${q(table)(key)} AS CHAR)`} FROM ${quoteDefinedTable(table)} WHERE ${where.join(" AND ")}`;
  return { sql, values: b.values };
}

/** The rows of the batch not in work, locked `FOR UPDATE SKIP LOCKED`, as `[id, advisory lock name or NULL]`. */
export function actionCandidatesSql(
  table: TableDefinition,
  selection: { ids: readonly RowId[] } | { keys: readonly string[] },
  scope: "queued" | "any",
  deadGroup: string | null,
  now: Date,
): Bound {
  const b = new Builder();
  const { id, lockedUntil } = table.columns;
  const name = table.form === "advisory" ? b.add(lockNameExpression(table)) : "NULL";
  const where = [selected(table, b, selection), ...(scope === "queued" ? queued(table, b, deadGroup) : [])];
  if (table.form === "lease" && lockedUntil !== undefined)
    where.push(`(${q(table)(lockedUntil)} IS NULL OR ${q(table)(lockedUntil)} <= ${b.value(now)})`);
  const sql = `SELECT ${q(table)(id)}, ${name} FROM ${quoteDefinedTable(table)} WHERE ${where.join(" AND ")} ORDER BY ${q(table)(id)} FOR UPDATE SKIP LOCKED`;
  return { sql, values: b.values };
}

/** Deletes, or makes due at `now`, the rows `ids` (already locked by this transaction). */
export function actionChangeSql(
  table: TableDefinition,
  kind: "delete" | "makeDue",
  ids: readonly RowId[],
  now: Date,
): Bound {
  const b = new Builder();
  const { id, runAt } = table.columns;
  if (kind === "delete" || runAt === undefined) {
    return {
      sql: `DELETE FROM ${quoteDefinedTable(table)} WHERE ${q(table)(id)} IN ${b.list(ids)}`,
      values: b.values,
    };
  }
  const set = `${q(table)(runAt)} = ${b.value(now)}`;
  return {
    sql: `UPDATE ${quoteDefinedTable(table)} SET ${set} WHERE ${q(table)(id)} IN ${b.list(ids)}`,
    values: b.values,
  };
}

/** The first `limit` dead rows in id order (only `ids`, only payloads containing `text`), locked `FOR UPDATE SKIP LOCKED`; their ids. */
export function redriveCandidatesSql(
  table: TableDefinition,
  from: { readonly group: string } | { readonly table: string },
  ids: readonly RowId[] | undefined,
  text: string | undefined,
  limit: number,
): Bound {
  const b = new Builder();
  const { id, group } = table.columns;
  const where: string[] = [];
  if ("group" in from)
    where.push(group === undefined ? "FALSE" : `${q(table)(group)} = ${b.value(from.group)}`);
  if (ids !== undefined) where.push(`${q(table)(id)} IN ${b.list(ids)}`);
  if (text !== undefined) where.push(`LOCATE(${b.value(text)}, ${payloadText(table)}) > 0`);
  const source =
    "table" in from ? quoteTable(from.table, table.schema, table.name) : quoteDefinedTable(table);
  const sql =
    `SELECT ${q(table)(id)} FROM ${source}${where.length === 0 ? "" : ` WHERE ${where.join(" AND ")}`} ` +
    `ORDER BY ${q(table)(id)} LIMIT ${b.value(limit)} FOR UPDATE SKIP LOCKED`;
  return { sql, values: b.values };
}

/** The changes a redrive writes: attempt 1, due at `now`, in `group`, unlocked. */
function redriveValues(
  table: TableDefinition,
  column: string,
  b: Builder,
  group: string | null,
  now: Date,
): string | undefined {
  const { attempt, runAt, lockedUntil } = table.columns;
  if (column === attempt) return "1";
  if (column === runAt) return b.value(now);
  if (column === table.columns.group) return b.value(group);
  if (column === lockedUntil) return "NULL";
  return undefined;
}

/** A group redrive: the rows `ids` back into the queue. */
export function redriveGroupSql(
  table: TableDefinition,
  ids: readonly RowId[],
  group: string | null,
  now: Date,
): Bound {
  const b = new Builder();
  const sets = table.allColumns.flatMap((column) => {
    const value = redriveValues(table, column, b, group, now);
    return value === undefined ? [] : [`${q(table)(column)} = ${value}`];
  });
  const sql = `UPDATE ${quoteDefinedTable(table)} SET ${sets.join(", ")} WHERE ${q(table)(table.columns.id)} IN ${b.list(ids)}`;
  return { sql, values: b.values };
}

/** A table redrive: copies the rows `ids` of the dead-letter table into the table, in id order. */
export function redriveInsertSql(
  table: TableDefinition,
  deadTable: string,
  ids: readonly RowId[],
  group: string | null,
  now: Date,
): Bound {
  const b = new Builder();
  const { id, lockedUntil } = table.columns;
  const copied = table.allColumns.filter((column) => column !== id && column !== lockedUntil);
  const values = copied.map((column) => redriveValues(table, column, b, group, now) ?? q(table)(column));
  const sql =
    `INSERT INTO ${quoteDefinedTable(table)} (${copied.map(q(table)).join(", ")}) ` +
    `SELECT ${values.join(", ")} FROM ${quoteTable(deadTable, table.schema, table.name)} WHERE ${q(table)(id)} IN ${b.list(ids)} ORDER BY ${q(table)(id)}`;
  return { sql, values: b.values };
}

/** A table redrive: deletes the copied rows from the dead-letter table. */
export function redriveDeleteSql(table: TableDefinition, deadTable: string, ids: readonly RowId[]): Bound {
  const b = new Builder();
  const sql = `DELETE FROM ${quoteTable(deadTable, table.schema, table.name)} WHERE ${q(table)(table.columns.id)} IN ${b.list(ids)}`;
  return { sql, values: b.values };
}

/** One batch of a prune: the `limit` oldest rows processed before `before`. */
export function pruneSql(table: TableDefinition, before: Date, limit: number): Bound {
  const column = table.columns.processedAt;
  if (column === undefined) throw new Error("rowclaim/mysql: prune needs a processedAt column.");
  return {
    sql: `DELETE FROM ${quoteDefinedTable(table)} WHERE ${q(table)(column)} < ? ORDER BY ${q(table)(column)} LIMIT ?`,
    values: [before, limit],
  };
}

/** The prune lock's name: the database, the table; its SHA-256 past 64 characters (the longest `GET_LOCK` name on MySQL). */
function pruneLockName(table: TableDefinition): Bound {
  const name = "CONCAT('rowclaim-prune:', LOWER(CONVERT(COALESCE(?, DATABASE()) USING utf8mb4)), '.', ?)";
  const values = [table.schema ?? null, table.name];
  return {
    sql: `IF(CHAR_LENGTH(${name}) > 64, SHA2(${name}, 256), ${name})`,
    values: [...values, ...values, ...values],
  };
}

/** The prune lock: `GET_LOCK` of the table's prune name, never waiting. 1: locked. */
export function pruneLockSql(table: TableDefinition): Bound {
  const name = pruneLockName(table);
  return { sql: `SELECT GET_LOCK(${name.sql}, 0) AS \`locked\``, values: name.values };
}

/** Lets the prune lock go. */
export function pruneUnlockSql(table: TableDefinition): Bound {
  const name = pruneLockName(table);
  return { sql: `SELECT RELEASE_LOCK(${name.sql}) AS \`released\``, values: name.values };
}

/** Whether a listing can tell in SQL that a row is in work (lease, advisory); the row lock form is told by a locking read. */
export function inWorkInSql(table: TableDefinition): boolean {
  return table.form !== "rowLock";
}

/** In work, as SQL (lease: an unexpired lease; advisory: the key's lock name is used). */
function inWorkExpression(table: TableDefinition, b: Builder, now: Date): string {
  const until = table.columns.lockedUntil;
  if (table.form === "lease" && until !== undefined)
    return `(${q(table)(until)} IS NOT NULL AND ${q(table)(until)} > ${b.value(now)})`;
  if (table.form === "advisory") return `(IS_USED_LOCK(${b.add(lockNameExpression(table))}) IS NOT NULL)`;
  return "FALSE";
}

/** What a listing asks for. */
export interface ListShape {
  readonly state?: RowState | undefined;
  readonly filter: RowFilter;
  readonly deadGroup: string | null;
  readonly after?: RowId | undefined;
  readonly limit: number;
  readonly now: Date;
}

/**
 * One page of rows in id order, as arrays: the described columns, in work, the holder's session,
 * the lock name. In the row lock form the states that depend on a lock are left to the caller
 * (the page holds every queued row, and {@link lockableSql} says which are free).
 */
export function listSql(table: TableDefinition, shape: ListShape): Bound {
  const b = new Builder();
  const c = table.columns;
  const col = q(table);
  const inWorkSelect = inWorkExpression(table, b, shape.now);
  const holder = table.form === "advisory" ? `IS_USED_LOCK(${b.add(lockNameExpression(table))})` : "NULL";
  const name = table.form === "advisory" ? b.add(lockNameExpression(table)) : "NULL";
  const where: string[] = [];
  const filter = shape.filter;
  if (filter.ids !== undefined) where.push(`${col(c.id)} IN ${b.list(filter.ids)}`);
  const key = keyColumnOf(table);
  if (filter.keys !== undefined)
    where.push(key === undefined ? "FALSE" : `${col(key)} IN ${b.list(filter.keys)}`);
  if (filter.text !== undefined) where.push(`LOCATE(${b.value(filter.text)}, ${payloadText(table)}) > 0`);
  if (filter.group !== undefined && c.group !== undefined)
    where.push(
      filter.group === null ? `${col(c.group)} IS NULL` : `${col(c.group)} = ${b.value(filter.group)}`,
    );
  const due = (): string =>
    c.runAt === undefined ? "TRUE" : `(${col(c.runAt)} IS NULL OR ${col(c.runAt)} <= ${b.value(shape.now)})`;
  const inWork = (): string => (inWorkInSql(table) ? inWorkExpression(table, b, shape.now) : "TRUE");
  const notInWork = (): string =>
    inWorkInSql(table) ? `NOT ${inWorkExpression(table, b, shape.now)}` : "TRUE";
  switch (shape.state) {
    case undefined:
      break;
    case "processed":
      where.push(c.processedAt === undefined ? "FALSE" : `${col(c.processedAt)} IS NOT NULL`);
      break;
    case "dead":
      where.push(...queued(table, b, null));
      where.push(
        c.group === undefined || shape.deadGroup === null
          ? "FALSE"
          : `${col(c.group)} = ${b.value(shape.deadGroup)}`,
      );
      break;
    case "inWork":
      where.push(...queued(table, b, shape.deadGroup), inWork());
      break;
    case "due":
      where.push(...queued(table, b, shape.deadGroup), due(), notInWork());
      break;
    case "delayed":
      where.push(...queued(table, b, shape.deadGroup), `NOT ${due()}`, notInWork());
      break;
  }
  if (shape.after !== undefined) where.push(`${col(c.id)} > ${b.value(shape.after)}`);
  const sql =
    `SELECT ${selectList(table)}, ${inWorkSelect} AS rc_in_work, ${holder} AS rc_holder, ${name} AS rc_name FROM ${quoteDefinedTable(table)}` +
    `${where.length === 0 ? "" : ` WHERE ${where.join(" AND ")}`} ORDER BY ${col(c.id)} LIMIT ${b.value(shape.limit)}`;
  return { sql, values: b.values };
}

/** Of the rows `ids`, those no other transaction holds: read `FOR UPDATE SKIP LOCKED` (MariaDB has no `FOR SHARE`). */
export function lockableSql(table: TableDefinition, ids: readonly RowId[]): Bound {
  const b = new Builder();
  const sql = `SELECT ${q(table)(table.columns.id)} FROM ${quoteDefinedTable(table)} WHERE ${q(table)(table.columns.id)} IN ${b.list(ids)} FOR UPDATE SKIP LOCKED`;
  return { sql, values: b.values };
}

/** How many rows a listing without a page would return, at most `cap` (lease and advisory forms, or states that need no lock). */
export function countSql(
  table: TableDefinition,
  shape: Omit<ListShape, "after" | "limit">,
  cap: number,
): Bound {
  const list = listSql(table, { ...shape, after: undefined, limit: cap });
  return { sql: `SELECT COUNT(*) FROM (${list.sql}) AS rc_capped`, values: list.values };
}
