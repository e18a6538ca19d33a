/**
 * Startup checks of a subscription: the table, its columns and the dead-letter table exist, and
 * every statement the claimer will run prepares; else a `SchemaError` naming what is missing.
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

/** Refuses names PostgreSQL cannot hold (a NUL character) before any SQL is sent; any other name is quoted. */
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
  const result = await connection.client.query({ text: tableColumnsSql, values: [tableRef(table, name)] });
  const where = table.schema === undefined ? "the connection's search_path" : `schema "${table.schema}"`;
  const form = formLabels[table.form];
  if (result.rows.length === 0) {
    const dotted =
      table.schema === undefined && name.includes(".")
        ? ` (a name is one identifier: name the schema with \`schema\`, not "${name}")`
        : "";
    throw new SchemaError(
      `Table "${name}" does not exist in ${where}, and the ${statement} of table "${table.name}" (${form} form) needs it. Create it (driver.schemaSql(table) prints the recommended schema) or fix the name${dotted}.`,
      { table: name, statement },
    );
  }
  const types = new Map(result.rows.map((row) => [String(row.name), String(row.type)]));
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
 * Prepares each statement (`PREPARE`, then `DEALLOCATE`) to check it against the schema.
 *
 * @throws {SchemaError} naming the table, the column and the statement (a lost connection is rethrown).
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
      // A lost connection says nothing about the schema: reported as CONNECTION_LOST, which is retried.
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
