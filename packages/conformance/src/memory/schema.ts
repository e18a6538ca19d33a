/**
 * The memory driver's schema: the `CREATE TABLE` text its `schemaSql` writes (which
 * {@link executeSql} runs), and the check at open that the table and every column it is
 * described with exist.
 *
 * @module
 */
import { SchemaError, type TableDefinition } from "@rowclaim/core";
import type { MemoryDatabase, MemoryTable } from "./store.js";

/** Quotes an identifier as the memory database's statements write it: double quotes, doubled inside. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The table reference `"schema"."name"`, or `"name"`. */
function tableReference(table: TableDefinition, name: string = table.name): string {
  return table.schema === undefined
    ? quoteIdentifier(name)
    : `${quoteIdentifier(table.schema)}.${quoteIdentifier(name)}`;
}

/** The `CREATE TABLE` statement of `table` (named `name`), every identifier quoted. */
export function schemaSql(table: TableDefinition, name: string = table.name): string {
  const c = table.columns;
  const lines = [
    `${quoteIdentifier(c.id)} serial PRIMARY KEY`,
    `${quoteIdentifier(c.payload)} ${table.payloadType} NOT NULL`,
  ];
  if (c.attempt !== undefined) lines.push(`${quoteIdentifier(c.attempt)} integer NOT NULL DEFAULT 1`);
  if (c.runAt !== undefined) lines.push(`${quoteIdentifier(c.runAt)} timestamp`);
  if (c.priority !== undefined) lines.push(`${quoteIdentifier(c.priority)} integer NOT NULL DEFAULT 0`);
  if (c.group !== undefined) lines.push(`${quoteIdentifier(c.group)} text`);
  if (c.processedAt !== undefined) lines.push(`${quoteIdentifier(c.processedAt)} timestamp`);
  if (c.lockedUntil !== undefined) lines.push(`${quoteIdentifier(c.lockedUntil)} timestamp`);
  if (c.headers !== undefined) lines.push(`${quoteIdentifier(c.headers)} json`);
  if (c.key !== undefined) lines.push(`${quoteIdentifier(c.key)} text`);
  for (const extra of table.extraColumns) lines.push(`${quoteIdentifier(extra)} text`);
  const create = `CREATE TABLE IF NOT EXISTS ${tableReference(table, name)} (\n  ${lines.join(",\n  ")}\n);\n`;
  if (c.key === undefined) return create;
  return `${create}CREATE UNIQUE INDEX ${quoteIdentifier(`${name}_key`)} ON ${tableReference(table, name)} (${quoteIdentifier(c.key)});\n`;
}

function missingColumn(table: TableDefinition, name: string, column: string, doing: string): SchemaError {
  return new SchemaError(
    `Table "${name}" has no column "${column}", which the description of "${table.name}" names (${doing}). Add the column (see schemaSql()) or fix the description.`,
    { table: table.name, column, statement: doing },
  );
}

function requireColumns(
  table: TableDefinition,
  data: MemoryTable,
  columns: readonly string[],
  doing: string,
): void {
  for (const column of columns) {
    if (!data.columns.has(column)) throw missingColumn(table, data.name, column, doing);
  }
}

/**
 * Checks at open that `table` exists with every described column, and that its dead-letter
 * table (if it names one) exists with the columns a moved row is copied into.
 *
 * @throws {SchemaError} naming the table, the column and what was being checked.
 */
export function checkSchema(database: MemoryDatabase, table: TableDefinition): void {
  const data = database.requireTable(table, "opening a subscription");
  requireColumns(table, data, table.allColumns, "opening a subscription");
  const target = table.deadLetter;
  if (target !== undefined && "table" in target) {
    const dead = database.requireTable(table, "checking the dead-letter table", target.table);
    const { id, lockedUntil } = table.columns;
    const copied = table.allColumns.filter((column) => column !== id && column !== lockedUntil);
    requireColumns(table, dead, copied, `moving rows to the dead-letter table "${target.table}"`);
  }
}
