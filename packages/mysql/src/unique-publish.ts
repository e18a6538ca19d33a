/**
 * Unique publishes on MySQL and MariaDB: each row its own autocommit statements, in order. The
 * insert lets the key's unique index decide; where it refuses (`ER_DUP_ENTRY` naming the key
 * index), one `UPDATE … WHERE key = ?` keeps or replaces the queued holder and reports its id.
 * When that matches nothing (the holder was claimed or finished in between) the insert runs
 * again; deadlocks (1213) and lock wait timeouts (1205) are retried too. No statement waits for
 * a handler: rows in work hold no key.
 *
 * @module
 */
import { type PublishResult, type RowId, SchemaError, type TableDefinition } from "@rowclaim/core";
import { UNIQUE_PUBLISH_ATTEMPTS, type UniquePublishRow } from "@rowclaim/core/driver";
import { normalizeError } from "./normalize-error.js";
import { matchedRows, type QueryableLike, run, selectRows } from "./pool-like.js";
import { uniqueIndexName } from "./sql.js";
import { addUniqueKeySql, uniqueHolder, uniqueIndexCheckSql, uniqueInsert } from "./unique-sql.js";

const retriedErrnos = new Set([1213, 1205]);

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
  let last: unknown;
  for (let attempt = 0; attempt < UNIQUE_PUBLISH_ATTEMPTS; attempt++) {
    try {
      const header = await run(client, insert.sql, insert.values);
      return { id: header.insertId as RowId, outcome: "inserted" };
    } catch (error) {
      last = error;
      const errno = (error as { errno?: unknown }).errno;
      if (typeof errno === "number" && retriedErrnos.has(errno)) continue;
      if (row.key === null || errno !== 1062 || !isKeyIndex(error, table)) {
        throw normalizeError(error, {
          table: table.name,
          operation: "unique publish",
          statement: insert.sql,
        });
      }
    }
    const replace = row.onConflict === "replace";
    const holder = uniqueHolder(table, row, row.key, replace);
    try {
      const header = await run(client, holder.sql, holder.values);
      if (matchedRows(header) === 1)
        return { id: header.insertId as RowId, outcome: replace ? "replaced" : "kept" };
    } catch (error) {
      last = error;
      const errno = (error as { errno?: unknown }).errno;
      if (!(typeof errno === "number" && retriedErrnos.has(errno))) {
        throw normalizeError(error, {
          table: table.name,
          operation: "unique publish",
          statement: holder.sql,
        });
      }
    }
  }
  throw normalizeError(last, { table: table.name, operation: "unique publish" });
}

/** Whether a duplicate-key error names the key's unique index (MySQL 8 writes `table.index`). */
function isKeyIndex(error: unknown, table: TableDefinition): boolean {
  const message = String(
    (error as { sqlMessage?: unknown; message?: unknown }).sqlMessage ?? (error as Error).message,
  );
  const name = uniqueIndexName(table);
  return message.includes(`'${name}'`) || message.includes(`.${name}'`);
}

/**
 * Refuses a key table without a unique index on exactly its key column.
 *
 * @throws {SchemaError} naming the table, the key column and the index to add.
 */
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
