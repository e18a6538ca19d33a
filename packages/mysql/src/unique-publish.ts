/**
 * Unique publishes on MySQL and MariaDB (DRIVERS.md, "Unique jobs"): per row, the insert, and
 * where the key's index refuses it, one `UPDATE … WHERE key = ?` keeping or replacing the holder.
 *
 * @module
 */
import { type PublishResult, type RowId, SchemaError, type TableDefinition } from "@rowclaim/core";
import { retryUniqueAttempt, type UniquePublishRow } from "@rowclaim/core/driver";
import { classifyError, normalizeError } from "./normalize-error.js";
import { matchedRows, type QueryableLike, run, selectRows } from "./pool-like.js";
import { uniqueIndexName } from "./sql.js";
import { addUniqueKeySql, uniqueHolder, uniqueIndexCheckSql, uniqueInsert } from "./unique-sql.js";

/** Publishes `rows` of `table` on `client` (a pool), in order; returns what happened to each. */
export async function publishUniqueRows(
  client: QueryableLike,
  table: TableDefinition,
  rows: readonly UniquePublishRow[],
): Promise<PublishResult[]> {
  const results: PublishResult[] = [];
  for (const row of rows) results.push(await publishOne(client, table, row));
  return results;
}

async function publishOne(
  client: QueryableLike,
  table: TableDefinition,
  row: UniquePublishRow,
): Promise<PublishResult> {
  const insert = uniqueInsert(table, row, row.key);
  const replace = row.onConflict === "replace";
  const holder = row.key === null ? null : uniqueHolder(table, row, row.key, replace);
  let last: unknown;
  return retryUniqueAttempt({
    attempt: async (): Promise<PublishResult | undefined> => {
      try {
        const header = await run(client, insert.sql, insert.values);
        return { id: header.insertId as RowId, outcome: "inserted" };
      } catch (error) {
        last = error;
        if (isRetried(error)) throw error;
        if (holder === null || (error as { errno?: unknown }).errno !== 1062 || !isKeyIndex(error, table)) {
          throw normalizeError(error, {
            table: table.name,
            operation: "unique publish",
            statement: insert.sql,
          });
        }
      }
      try {
        const header = await run(client, holder.sql, holder.values);
        if (matchedRows(header) === 1)
          return { id: header.insertId as RowId, outcome: replace ? "replaced" : "kept" };
        return undefined;
      } catch (error) {
        last = error;
        if (isRetried(error)) throw error;
        throw normalizeError(error, {
          table: table.name,
          operation: "unique publish",
          statement: holder.sql,
        });
      }
    },
    retried: isRetried,
    exhausted: () => normalizeError(last, { table: table.name, operation: "unique publish" }),
  });
}

/** Whether `error` is a deadlock or lock wait timeout, which the next attempt may not meet. */
function isRetried(error: unknown): boolean {
  return classifyError(error).retryable;
}

/** Whether a duplicate-key error names the key's unique index (MySQL 8 writes `table.index`). */
function isKeyIndex(error: unknown, table: TableDefinition): boolean {
  const message = String(
    (error as { sqlMessage?: unknown; message?: unknown }).sqlMessage ?? (error as Error).message,
  );
  const name = uniqueIndexName(table);
  return message.includes(`'${name}'`) || message.includes(`.${name}'`);
}

/** Refuses, with `SchemaError`, a key table without a unique index on exactly its key column. */
export async function checkUniqueIndex(client: QueryableLike, table: TableDefinition): Promise<void> {
  const key = table.columns.key;
  if (key === undefined) return;
  const [found] = await selectRows(client, uniqueIndexCheckSql, [table.schema ?? null, table.name, key]);
  if (Number(found?.[0]) > 0) return;
  throw new SchemaError(
    `Table "${table.name}" has no unique index on its key column "${key}", which unique publishes need (the database must refuse a second queued row of a key). Add it: ${addUniqueKeySql(table)}`,
    { table: table.name, column: key },
  );
}
