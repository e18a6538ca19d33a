/**
 * Publishing: one multi-row `INSERT` per call, on the driver's pool or inside the caller's own
 * transaction (`client`). The ids come back in order: MariaDB by `INSERT … RETURNING`; MySQL,
 * which has no `RETURNING`, from `insertId` onwards (one multi-row statement takes consecutive
 * values, stepped by `auto_increment_increment`).
 *
 * @module
 */
import { InvalidArgumentError, type PublishRow, type RowId, type TableDefinition } from "@rowclaim/core";
import type { QueryableLike, ResultHeaderLike } from "./client.js";
import { normalizeError } from "./normalize-error.js";
import type { ServerInfo } from "./server-info.js";
import { insertStatement } from "./sql.js";

/**
 * Inserts `rows` on `client` and returns their ids in order. Never commits: inside a caller's
 * transaction the rows exist only if it commits.
 */
export async function publishRows(
  client: QueryableLike,
  server: ServerInfo,
  table: TableDefinition,
  rows: readonly PublishRow[],
): Promise<readonly RowId[]> {
  if (rows.length === 0) return [];
  const insert = insertStatement(table, server.version.family, rows);
  let result: unknown;
  try {
    [result] = await client.query({ sql: insert.sql, values: insert.values, rowsAsArray: true });
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation: "publish", statement: insert.sql });
  }
  if (server.version.family === "mariadb") return (result as unknown[][]).map((row) => row[0] as RowId);
  const { insertId } = result as ResultHeaderLike;
  const step = server.autoIncrementIncrement;
  if (typeof insertId === "string") {
    const first = BigInt(insertId);
    return rows.map((_, index) => (first + BigInt(index * step)).toString());
  }
  return rows.map((_, index) => insertId + index * step);
}

/**
 * The client to publish on: a `mysql2/promise` connection, or a callback-style mysql2
 * connection (its `.promise()` wrapper is used).
 *
 * @throws {InvalidArgumentError} for anything else.
 */
export function publishClient(client: unknown, table: TableDefinition): QueryableLike {
  if (typeof client === "object" && client !== null) {
    const candidate = client as { promise?: unknown; query?: unknown };
    if (typeof candidate.promise === "function")
      return (candidate.promise as () => QueryableLike).call(client);
    if (typeof candidate.query === "function") return client as QueryableLike;
  }
  throw new InvalidArgumentError(
    `publish(${table.name}, …, { client }): the MySQL driver takes a mysql2 connection (mysql2/promise, or a callback connection) inside a transaction you opened.`,
    { table: table.name },
  );
}
