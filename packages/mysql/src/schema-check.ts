/**
 * The startup check of a subscription's table (and dead-letter table), from `information_schema`.
 *
 * @module
 */
import { SchemaError, type TableDefinition } from "@rowclaim/core";
import { type QueryableLike, selectRows } from "./pool-like.js";
import { claimOrderColumns, columnsSql, indexColumnsSql } from "./sql.js";
import { checkUniqueIndex } from "./unique-publish.js";

/** Checks `tableName` has every column `table` describes, else `SchemaError` naming the `role`, column and statement. */
async function checkColumns(
  client: QueryableLike,
  table: TableDefinition,
  tableName: string,
  statement: string,
  role: string,
): Promise<void> {
  const rows = await selectRows(client, columnsSql, [table.schema ?? null, tableName]);
  const present = new Set(rows.map((row) => String(row[0]).toLowerCase()));
  const where = table.schema === undefined ? "the connection's database" : `database "${table.schema}"`;
  if (present.size === 0) {
    throw new SchemaError(
      `Table "${table.name}" (${table.form} form): the ${role} "${tableName}" does not exist in ${where}. Create it (the driver's schemaSql() gives the statement) before subscribing.`,
      { table: table.name, statement },
    );
  }
  for (const column of table.allColumns) {
    if (!present.has(column.toLowerCase())) {
      throw new SchemaError(
        `Table "${table.name}" (${table.form} form): the ${role} "${tableName}" has no column "${column}", which the description names and this statement needs: ${statement}. Add the column or fix the description.`,
        { table: table.name, column, statement },
      );
    }
  }
}

/** Checks the table and, where its dead letter names a table, that table too. */
export async function checkSchema(
  client: QueryableLike,
  table: TableDefinition,
  claimStatement: string,
  deadLetterStatement?: string,
): Promise<void> {
  await checkColumns(client, table, table.name, claimStatement, "table");
  await checkUniqueIndex(client, table);
  if (table.deadLetter !== undefined && "table" in table.deadLetter) {
    await checkColumns(
      client,
      table,
      table.deadLetter.table,
      deadLetterStatement ?? claimStatement,
      "dead-letter table",
    );
  }
}

/** An index of `table` beginning with the claim order ({@link claimOrderColumns}), for locking claims to name. */
export async function findClaimIndex(
  client: QueryableLike,
  table: TableDefinition,
): Promise<string | undefined> {
  const order = claimOrderColumns(table).map((column) => column.toLowerCase());
  if (order.length < 2) return undefined;
  const rows = await selectRows(client, indexColumnsSql, [table.schema ?? null, table.name]);
  const indexes = new Map<string, string[]>();
  for (const [name, column] of rows) {
    const key = String(name);
    const columns = indexes.get(key) ?? [];
    columns.push(String(column).toLowerCase());
    indexes.set(key, columns);
  }
  for (const [name, columns] of indexes) {
    if (order.every((column, index) => columns[index] === column)) return name;
  }
  return undefined;
}
