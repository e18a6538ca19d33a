/**
 * The schema check of unique jobs: a key table needs a unique, non-partial index on exactly the key column.
 *
 * @module
 */
import { SchemaError, type TableDefinition } from "@rowclaim/core";
import type { HeldConnection } from "./connection.js";
import { uniqueIndexSql } from "./sql.js";
import { uniqueIndexCheckSql } from "./unique-sql.js";

/**
 * Refuses a key table without the key's unique index.
 *
 * @throws {SchemaError} naming the table, the key column and the index to create.
 */
export async function checkUniqueIndex(connection: HeldConnection, table: TableDefinition): Promise<void> {
  const key = table.columns.key;
  if (key === undefined) return;
  const result = await connection.client.query({
    text: uniqueIndexCheckSql,
    values: [table.schema ?? null, table.name, key],
  });
  if (result.rows[0]?.rc_found === true) return;
  throw new SchemaError(
    `Table "${table.name}" has no unique index on its key column "${key}", which unique publishes need (the database must refuse a second queued row of a key). Create it: ${uniqueIndexSql(table).trim()}`,
    { table: table.name, column: key, statement: "unique publish" },
  );
}
