/**
 * Startup checks of a subscription: the table and every described column exist (respecting the
 * table's schema, or the search_path), the dead-letter table too, and every statement the
 * claimer will run prepares against them. A failure is a `SchemaError` naming the table, the
 * column and the statement.
 *
 * @module
 */
import { DeclarationError, SchemaError, type TableDefinition } from "@rowclaim/core";
import { formLabels } from "@rowclaim/core/driver";
import type { HeldConnection } from "./connection.js";
import { columnFromMessage, isConnectionLost } from "./normalize-error.js";
import {
  type ColumnTypes,
  deallocateSql,
  prepareCheckSql,
  type Statement,
  tableColumnsSql,
  tableRef,
} from "./sql.js";

/**
 * Refuses names PostgreSQL cannot hold at all (a NUL character), before any SQL is sent. Every
 * other name, quotes and spaces included, is quoted and works.
 */
export function assertNamesUsable(table: TableDefinition): void {
  const names = [table.name, ...(table.schema === undefined ? [] : [table.schema]), ...table.allColumns];
  if (table.deadLetter !== undefined && "table" in table.deadLetter) names.push(table.deadLetter.table);
  for (const name of names) {
    if (name.includes("\u0000")) {
      throw new DeclarationError(
        `Table "${table.name.replaceAll("\u0000", "\\0")}": the name ${JSON.stringify(name)} holds a NUL character, which PostgreSQL identifiers cannot hold. Rename it.`,
        { table: table.name },
      );
    }
  }
}

/** Reads the columns of `name` (in the table's schema) and their types; `null` when the table does not exist. */
export async function readColumnTypes(
  connection: HeldConnection,
  table: TableDefinition,
  name: string = table.name,
): Promise<Map<string, string> | null> {
  const result = await connection.client.query({ text: tableColumnsSql, values: [tableRef(table, name)] });
  if (result.rows.length === 0) return null;
  return new Map(result.rows.map((row) => [String(row.name), String(row.type)]));
}

/**
 * Checks that `name` exists with every column in `required`; returns its column types.
 *
 * @throws {SchemaError} naming the table, the missing column and `statement`.
 */
export async function checkColumns(
  connection: HeldConnection,
  table: TableDefinition,
  required: readonly string[],
  statement: string,
  name: string = table.name,
): Promise<ColumnTypes> {
  const types = await readColumnTypes(connection, table, name);
  const where = table.schema === undefined ? "the connection's search_path" : `schema "${table.schema}"`;
  const form = formLabels[table.form];
  if (types === null) {
    const dotted =
      table.schema === undefined && name.includes(".")
        ? ` (a name is one identifier: name the schema with \`schema\`, not "${name}")`
        : "";
    throw new SchemaError(
      `Table "${name}" does not exist in ${where}, and the ${statement} of table "${table.name}" (${form} form) needs it. Create it (driver.schemaSql(table) prints the recommended schema) or fix the name${dotted}.`,
      { table: name, statement },
    );
  }
  for (const column of required) {
    if (!types.has(column)) {
      throw new SchemaError(
        `Table "${name}" has no column "${column}", which the ${statement} of table "${table.name}" (${form} form) needs. Add the column or fix the description.`,
        { table: name, column, statement },
      );
    }
  }
  return types;
}

/**
 * Prepares each statement (`PREPARE`, then `DEALLOCATE`) to check it against the schema
 * without running it.
 *
 * @throws {SchemaError} naming the table, the column the server names and the statement; a lost
 *   connection is thrown as the client's own error (the driver reports it as `CONNECTION_LOST`).
 */
export async function checkStatements(
  connection: HeldConnection,
  table: TableDefinition,
  statements: readonly Statement[],
): Promise<void> {
  for (const stmt of statements) {
    const name = `${stmt.name}_check`;
    try {
      await connection.text(prepareCheckSql(name, stmt.text));
    } catch (error) {
      // A connection lost while preparing says nothing about the schema: it is passed on, for
      // the driver to report as CONNECTION_LOST (which a supervisor retries; SCHEMA it does not).
      if (isConnectionLost(error)) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new SchemaError(
        `Table "${table.name}" (${formLabels[table.form]} form): PostgreSQL refused the ${stmt.purpose} statement: ${message}. Check the column types against the description (driver.schemaSql(table) prints the recommended schema).`,
        { table: table.name, column: columnFromMessage(message), statement: stmt.purpose, cause: error },
      );
    }
    await connection.text(deallocateSql(name));
  }
}
