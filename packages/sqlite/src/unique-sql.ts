/**
 * The SQL of unique jobs on SQLite: the key column's unique index, the insert that lets the
 * index decide, the read or replacement of the queued row that holds the key (every claim writes
 * NULL into the key), and the check that the index exists.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { qualifiedTable, quoteIdentifier } from "./sql.js";

/** `CREATE UNIQUE INDEX IF NOT EXISTS <table>_key` on the key column (NULLs, the keys of claimed rows, are distinct). */
export function uniqueIndexSql(table: TableDefinition): string {
  const index = qualifiedTable(`${table.name}_key`, table.schema);
  return `CREATE UNIQUE INDEX IF NOT EXISTS ${index} ON ${quoteIdentifier(table.name)} (${quoteIdentifier(table.columns.key as string)});`;
}

/** The insert of one unique row into `columns` (quoted), keeping a queued holder: returns the id only when inserted. */
export function uniqueInsertSql(table: TableDefinition, columns: readonly string[]): string {
  const key = quoteIdentifier(table.columns.key as string);
  const values = columns.map(() => "?").join(", ");
  return (
    `INSERT INTO ${qualifiedTable(table.name, table.schema)} (${[...columns, key].join(", ")}) VALUES (${values}, ?) ` +
    `ON CONFLICT (${key}) DO NOTHING RETURNING ${quoteIdentifier(table.columns.id)} AS rc_id`
  );
}

/** The id of the queued row holding the key `?`. */
export function uniqueHolderSql(table: TableDefinition): string {
  return `SELECT ${quoteIdentifier(table.columns.id)} AS rc_id FROM ${qualifiedTable(table.name, table.schema)} WHERE ${quoteIdentifier(table.columns.key as string)} = ?`;
}

/** Replaces `columns` (quoted, each set from `?` in order) of the queued row holding the key (the last `?`). */
export function uniqueReplaceSql(table: TableDefinition, columns: readonly string[]): string {
  const sets = columns.map((column) => `${column} = ?`).join(", ");
  return `UPDATE ${qualifiedTable(table.name, table.schema)} SET ${sets} WHERE ${quoteIdentifier(table.columns.key as string)} = ? RETURNING ${quoteIdentifier(table.columns.id)} AS rc_id`;
}

/** Whether a unique, non-partial index on exactly the key column exists (`@table`, `@schema`, `@key`). */
export const uniqueIndexCheckSql =
  'SELECT 1 AS found FROM pragma_index_list(@table, @schema) AS il WHERE il."unique" = 1 AND il.partial = 0 ' +
  "AND (SELECT count(*) FROM pragma_index_info(il.name, @schema)) = 1 " +
  "AND (SELECT name FROM pragma_index_info(il.name, @schema)) = @key";
