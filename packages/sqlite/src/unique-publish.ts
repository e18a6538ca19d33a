/**
 * Unique publishes on SQLite: each row in an `IMMEDIATE` transaction (the write lock held, so
 * the queued row holding its key cannot be claimed between the statements): the insert with
 * `ON CONFLICT (key) DO NOTHING`, then, where the index refused it, the holder's id (keep) or
 * its replacement (replace). `SQLITE_BUSY` from other processes is retried by the driver.
 *
 * @module
 */
import { type PublishResult, type RowId, SchemaError, type TableDefinition } from "@rowclaim/core";
import type { UniquePublishRow } from "@rowclaim/core/driver";
import type { SqliteDatabase } from "./database.js";
import { toSqliteValue } from "./publish.js";
import { quoteIdentifier } from "./sql.js";
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
  return inTransaction(db, "immediate", () => rows.map((row) => publishOne(db, table, row)));
}

function publishOne(db: SqliteDatabase, table: TableDefinition, row: UniquePublishRow): PublishResult {
  const { payload, group, runAt, priority, headers } = table.columns;
  const columns: string[] = [quoteIdentifier(payload)];
  const values: unknown[] = [row.payload];
  const replaced: string[] = [quoteIdentifier(payload)];
  const replacedValues: unknown[] = [row.payload];
  const runAtValue = row.runAt === null ? null : row.runAt.getTime();
  if (group !== undefined) {
    columns.push(quoteIdentifier(group));
    values.push(row.group);
  }
  if (runAt !== undefined) {
    columns.push(quoteIdentifier(runAt));
    values.push(runAtValue);
    replaced.push(quoteIdentifier(runAt));
    replacedValues.push(runAtValue);
  }
  if (priority !== undefined && row.priority !== null) {
    columns.push(quoteIdentifier(priority));
    values.push(toSqliteValue(row.priority));
    replaced.push(quoteIdentifier(priority));
    replacedValues.push(toSqliteValue(row.priority));
  }
  if (headers !== undefined) {
    columns.push(quoteIdentifier(headers));
    values.push(row.headers);
    replaced.push(quoteIdentifier(headers));
    replacedValues.push(row.headers);
  }
  for (const extra of table.extraColumns) {
    if (!Object.hasOwn(row.values, extra)) continue;
    columns.push(quoteIdentifier(extra));
    values.push(toSqliteValue(row.values[extra]));
  }
  const inserted = db.prepare(uniqueInsertSql(table, columns)).get([...values, row.key]) as
    | { rc_id: RowId }
    | undefined;
  if (inserted !== undefined) return { id: inserted.rc_id, outcome: "inserted" };
  if (row.onConflict === "replace") {
    const updated = db.prepare(uniqueReplaceSql(table, replaced)).get([...replacedValues, row.key]) as {
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
