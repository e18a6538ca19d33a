/**
 * The SQL of unique jobs on MySQL and MariaDB (the same on both; the design: DRIVERS.md, "Unique
 * jobs"): the insert, and the holder's read or replacement reporting its id by `LAST_INSERT_ID(id)`.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type { PublishRow } from "@rowclaim/core/driver";
import { type Bound, quoteDefinedTable, quoteIdentifier, uniqueKeyClause } from "./sql.js";

/** The `ALTER TABLE … ADD UNIQUE KEY` for a table made without it (named in the schema check's error). */
export function addUniqueKeySql(table: TableDefinition): string {
  return `ALTER TABLE ${quoteDefinedTable(table)} ADD ${uniqueKeyClause(table)};`;
}

/** The single-row insert of a unique row, its key included. */
export function uniqueInsert(table: TableDefinition, row: PublishRow, key: string | null): Bound {
  const q = (column: string): string => quoteIdentifier(column, table.name);
  const { payload, group, runAt, priority, headers } = table.columns;
  const columns = [q(payload)];
  const values: unknown[] = [payloadValue(row)];
  if (group !== undefined) {
    columns.push(q(group));
    values.push(row.group);
  }
  if (runAt !== undefined) {
    columns.push(q(runAt));
    values.push(row.runAt);
  }
  if (priority !== undefined && row.priority !== null) {
    columns.push(q(priority));
    values.push(row.priority);
  }
  if (headers !== undefined) {
    columns.push(q(headers));
    values.push(row.headers);
  }
  for (const extra of table.extraColumns) {
    if (row.values[extra] === undefined) continue;
    columns.push(q(extra));
    values.push(row.values[extra]);
  }
  columns.push(q(table.columns.key as string));
  values.push(key);
  return {
    sql: `INSERT INTO ${quoteDefinedTable(table)} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    values,
  };
}

/**
 * The statement that finds (keep) or replaces (replace: payload, run time, priority where given,
 * headers) the queued row holding `key`, reporting its id as the header's `insertId`.
 */
export function uniqueHolder(table: TableDefinition, row: PublishRow, key: string, replace: boolean): Bound {
  const q = (column: string): string => quoteIdentifier(column, table.name);
  const { id, payload, runAt, priority, headers } = table.columns;
  const sets: string[] = [];
  const values: unknown[] = [];
  if (replace) {
    sets.push(`${q(payload)} = ?`);
    values.push(payloadValue(row));
    if (runAt !== undefined) {
      sets.push(`${q(runAt)} = ?`);
      values.push(row.runAt);
    }
    if (priority !== undefined && row.priority !== null) {
      sets.push(`${q(priority)} = ?`);
      values.push(row.priority);
    }
    if (headers !== undefined) {
      sets.push(`${q(headers)} = ?`);
      values.push(row.headers);
    }
  }
  sets.push(`${q(id)} = LAST_INSERT_ID(${q(id)})`);
  values.push(key);
  return {
    sql: `UPDATE ${quoteDefinedTable(table)} SET ${sets.join(", ")} WHERE ${q(table.columns.key as string)} = ?`,
    values,
  };
}

/** Whether a unique index on exactly the key column exists (`rc_found` 1). Values: the schema (or NULL), table, key column. */
export const uniqueIndexCheckSql =
  "SELECT COUNT(*) AS rc_found FROM (SELECT INDEX_NAME FROM information_schema.STATISTICS " +
  "WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0 " +
  "GROUP BY INDEX_NAME HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = ?) AS rc_unique";

function payloadValue(row: PublishRow): unknown {
  return typeof row.payload === "string"
    ? row.payload
    : Buffer.from(row.payload.buffer, row.payload.byteOffset, row.payload.byteLength);
}
