/**
 * Unique publishes on SQLite, in an `IMMEDIATE` transaction (so the queued row holding a key
 * cannot be claimed between the statements): the insert with `ON CONFLICT (key) DO NOTHING`,
 * then, where the index refused it, the holder's id (keep) or its replacement (replace).
 *
 * @module
 */
import { type PublishResult, type RowId, SchemaError, type TableDefinition } from "@rowclaim/core";
import type { UniquePublishRow } from "@rowclaim/core/driver";
import type { SqliteDatabase } from "./database.js";
import { publisherOf, type TablePublisher } from "./publish.js";
import { inTransaction } from "./transaction.js";
import {
  uniqueHolderSql,
  uniqueIndexCheckSql,
  uniqueIndexSql,
  uniqueInsertSql,
  uniqueReplaceSql,
} from "./unique-sql.js";

/** Publishes `rows` of `table` on `db`, in order, in one `IMMEDIATE` transaction; returns what happened to each. */
export function publishUniqueRows(
  db: SqliteDatabase,
  table: TableDefinition,
  rows: readonly UniquePublishRow[],
): PublishResult[] {
  const publisher = publisherOf(table);
  return inTransaction(db, "immediate", () => rows.map((row) => publishOne(db, table, publisher, row)));
}

function publishOne(
  db: SqliteDatabase,
  table: TableDefinition,
  publisher: TablePublisher,
  row: UniquePublishRow,
): PublishResult {
  const { columns, values } = publisher.rowValues(row);
  const inserted = db.prepare(uniqueInsertSql(table, columns)).get([...values, row.key]) as
    | { rc_id: RowId }
    | undefined;
  if (inserted !== undefined) return { id: inserted.rc_id, outcome: "inserted" };
  if (row.onConflict === "replace") {
    const replaced = publisher.rowValues(row, true);
    const updated = db
      .prepare(uniqueReplaceSql(table, replaced.columns))
      .get([...replaced.values, row.key]) as {
      rc_id: RowId;
    };
    return { id: updated.rc_id, outcome: "replaced" };
  }
  const holder = db.prepare(uniqueHolderSql(table)).get([row.key]) as { rc_id: RowId };
  return { id: holder.rc_id, outcome: "kept" };
}

/**
 * Refuses a key table without the key's unique index.
 *
 * @throws {SchemaError} naming the table, the key column and the index to create.
 */
export function checkUniqueIndex(db: SqliteDatabase, table: TableDefinition): void {
  const key = table.columns.key;
  if (key === undefined) return;
  const found = db
    .prepare(uniqueIndexCheckSql)
    .get({ table: table.name, schema: table.schema ?? "main", key });
  if (found !== undefined) return;
  throw new SchemaError(
    `Table "${table.name}" (SQLite): no unique index on its key column "${key}", which unique publishes need (the database must refuse a second queued row of a key). Create it: ${uniqueIndexSql(table)}`,
    { table: table.name, column: key },
  );
}
