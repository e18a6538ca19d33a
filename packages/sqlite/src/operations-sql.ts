/**
 * The SQL of the operations capability on SQLite (cancel, remove, retry now, redrive, prune,
 * row listing). SQLite has no row locks: a lease is read by its expiry, an advisory key by the
 * keys this process holds (passed as `@held`, a JSON array). Every statement changes at most one
 * batch: a `LIMIT`, or a JSON array of ids (`@ids`). Times are INTEGER epoch milliseconds.
 *
 * @module
 */
import { keyColumnOf, type RowFilter, type RowState, type TableDefinition } from "@rowclaim/core";
import { advisoryKeySql, qualifiedTable, quoteIdentifier } from "./sql.js";

const q = quoteIdentifier;

/** The table's quoted name, or its dead-letter table's (`name`). */
function target(table: TableDefinition, name = table.name): string {
  return qualifiedTable(name, table.schema);
}

/** `column` is one of the JSON array `@list`'s values. */
function inJson(column: string, list: "ids" | "keys"): string {
  return `${q(column)} IN (SELECT value FROM json_each(@${list}))`;
}

/** ` WHERE` and the conditions, or nothing. */
function whereSql(conditions: readonly string[]): string {
  return conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
}

/** The payload as text, for search. */
function payloadText(table: TableDefinition): string {
  return `CAST(${q(table.columns.payload)} AS TEXT)`;
}

/** Unfinished and not in the dead-letter group (`@deadGroup`). */
function queued(table: TableDefinition, deadGroup: string | null): string[] {
  const { processedAt, group } = table.columns;
  const out: string[] = [];
  if (processedAt !== undefined) out.push(`${q(processedAt)} IS NULL`);
  if (group !== undefined && deadGroup !== null) out.push(`${q(group)} IS NOT @deadGroup`);
  return out;
}

/** The selection: ids (`@ids`) or keys (`@keys`), each a JSON array. */
function selected(table: TableDefinition, by: "ids" | "keys"): string {
  if (by === "ids") return inJson(table.columns.id, "ids");
  const key = keyColumnOf(table);
  return key === undefined ? "0" : inJson(key, "keys");
}

/** In work, as SQL: an unexpired lease (`@now`), or a key this process holds (`@held`). */
function inWorkExpression(table: TableDefinition): string {
  const until = table.columns.lockedUntil;
  if (table.form === "lease" && until !== undefined)
    return `(${q(until)} IS NOT NULL AND ${q(until)} > @now)`;
  if (table.form === "advisory")
    return `((${advisoryKeySql(table).sql}) IN (SELECT value FROM json_each(@held)))`;
  return "0";
}

/** `rc_in_work` (unfinished and in work) and `rc_akey` (the rendered advisory key). */
function workColumns(table: TableDefinition): string {
  const { processedAt } = table.columns;
  const unfinished = processedAt === undefined ? "1" : `${q(processedAt)} IS NULL`;
  const key = table.form === "advisory" ? advisoryKeySql(table).sql : "NULL";
  return `(${unfinished} AND ${inWorkExpression(table)}) AS rc_in_work, ${key} AS rc_akey`;
}

/** The rows of one batch of a row action (the selection, in the scope) as `rc_id`, `rc_key` (the key column), `rc_in_work` and `rc_akey`. */
export function actionScopeSql(
  table: TableDefinition,
  by: "ids" | "keys",
  scope: "queued" | "any",
  deadGroup: string | null,
): string {
  const key = keyColumnOf(table);
  const where = [selected(table, by), ...(scope === "queued" ? queued(table, deadGroup) : [])];
  return (
    `SELECT ${q(table.columns.id)} AS rc_id, ${key === undefined ? "NULL" : `CAST(${q(key)} AS TEXT)`} AS rc_key, ` +
    `${workColumns(table)} FROM ${target(table)}${whereSql(where)} ORDER BY ${q(table.columns.id)}`
  );
}

/** Deletes, or makes due at `@now`, the rows of `@ids`. */
export function actionChangeSql(table: TableDefinition, kind: "delete" | "makeDue"): string {
  const where = inJson(table.columns.id, "ids");
  const runAt = table.columns.runAt;
  if (kind === "delete" || runAt === undefined) return `DELETE FROM ${target(table)} WHERE ${where}`;
  return `UPDATE ${target(table)} SET ${q(runAt)} = @now WHERE ${where}`;
}

/** The first `@limit` dead rows in id order (optionally only `@ids`, only payloads containing `@text`); their ids. */
export function redriveCandidatesSql(
  table: TableDefinition,
  from: { readonly group: string } | { readonly table: string },
  withIds: boolean,
  withText: boolean,
): string {
  const { id, group } = table.columns;
  const where: string[] = [];
  if ("group" in from) where.push(group === undefined ? "0" : `${q(group)} = @from`);
  if (withIds) where.push(inJson(id, "ids"));
  if (withText) where.push(`instr(${payloadText(table)}, @text) > 0`);
  const source = target(table, "table" in from ? from.table : table.name);
  return `SELECT ${q(id)} AS rc_id FROM ${source}${whereSql(where)} ORDER BY ${q(id)} LIMIT @limit`;
}

/** The value a redrive writes into `column`, or `undefined` to keep it: attempt 1, due at `@now`, in `@group`, unlocked. */
function redriveValue(table: TableDefinition, column: string): string | undefined {
  const { attempt, runAt, group, lockedUntil } = table.columns;
  if (column === attempt) return "1";
  if (column === runAt) return "@now";
  if (column === group) return "@group";
  if (column === lockedUntil) return "NULL";
  return undefined;
}

/** A group redrive: the rows of `@ids` back into the queue. */
export function redriveGroupSql(table: TableDefinition): string {
  const sets = table.allColumns.flatMap((column) => {
    const value = redriveValue(table, column);
    return value === undefined ? [] : [`${q(column)} = ${value}`];
  });
  return `UPDATE ${target(table)} SET ${sets.join(", ")} WHERE ${inJson(table.columns.id, "ids")}`;
}

/** A table redrive: the rows of `@ids` of the dead-letter table copied into the table, in id order. */
export function redriveInsertSql(table: TableDefinition, deadTable: string): string {
  const { id, lockedUntil } = table.columns;
  const copied = table.allColumns.filter((column) => column !== id && column !== lockedUntil);
  const values = copied.map((column) => redriveValue(table, column) ?? q(column));
  return (
    `INSERT INTO ${target(table)} (${copied.map(q).join(", ")}) ` +
    `SELECT ${values.join(", ")} FROM ${target(table, deadTable)} WHERE ${inJson(id, "ids")} ORDER BY ${q(id)}`
  );
}

/** A table redrive: the copied rows deleted from the dead-letter table. */
export function redriveDeleteSql(table: TableDefinition, deadTable: string): string {
  return `DELETE FROM ${target(table, deadTable)} WHERE ${inJson(table.columns.id, "ids")}`;
}

/** One batch of a prune: the `@limit` oldest rows processed before `@before`. */
export function pruneSql(table: TableDefinition): string {
  const { id, processedAt } = table.columns;
  if (processedAt === undefined) throw new Error("rowclaim/sqlite: prune needs a processedAt column.");
  return `DELETE FROM ${target(table)} WHERE ${q(id)} IN (SELECT ${q(id)} FROM ${target(table)} WHERE ${q(processedAt)} < @before ORDER BY ${q(processedAt)} LIMIT @limit)`;
}

/** What a listing asks for. */
export interface ListShape {
  readonly state?: RowState | undefined;
  readonly filter: RowFilter;
  readonly deadGroup: string | null;
  readonly after: boolean;
}

function listWhere(table: TableDefinition, shape: Omit<ListShape, "after">): string[] {
  const c = table.columns;
  const where: string[] = [];
  const filter = shape.filter;
  if (filter.ids !== undefined) where.push(inJson(c.id, "ids"));
  if (filter.keys !== undefined) where.push(selected(table, "keys"));
  if (filter.text !== undefined) where.push(`instr(${payloadText(table)}, @text) > 0`);
  if (filter.group !== undefined && c.group !== undefined)
    where.push(filter.group === null ? `${q(c.group)} IS NULL` : `${q(c.group)} = @group`);
  const due = c.runAt === undefined ? "1" : `(${q(c.runAt)} IS NULL OR ${q(c.runAt)} <= @now)`;
  const inWork = inWorkExpression(table);
  switch (shape.state) {
    case undefined:
      break;
    case "processed":
      where.push(c.processedAt === undefined ? "0" : `${q(c.processedAt)} IS NOT NULL`);
      break;
    case "dead":
      where.push(...queued(table, null));
      where.push(c.group === undefined || shape.deadGroup === null ? "0" : `${q(c.group)} = @deadGroup`);
      break;
    case "inWork":
      where.push(...queued(table, shape.deadGroup), inWork);
      break;
    case "due":
      where.push(...queued(table, shape.deadGroup), due, `NOT ${inWork}`);
      break;
    case "delayed":
      where.push(...queued(table, shape.deadGroup), `NOT ${due}`, `NOT ${inWork}`);
      break;
  }
  return where;
}

/** One page of rows in id order (`@after`, `@limit`), with `rc_in_work` and the rendered key `rc_akey`. */
export function listSql(table: TableDefinition, shape: ListShape): string {
  const where = listWhere(table, shape);
  if (shape.after) where.push(`${q(table.columns.id)} > @after`);
  return (
    `SELECT ${table.allColumns.map(q).join(", ")}, ${workColumns(table)} ` +
    `FROM ${target(table)}${whereSql(where)} ORDER BY ${q(table.columns.id)} LIMIT @limit`
  );
}

/** How many rows match, at most `@cap`. */
export function countSql(table: TableDefinition, shape: Omit<ListShape, "after">): string {
  return `SELECT COUNT(*) AS rc_count FROM (SELECT 1 FROM ${target(table)}${whereSql(listWhere(table, shape))} LIMIT @cap)`;
}
