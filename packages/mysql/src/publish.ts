/**
 * Publishing (DRIVERS.md, "Publishing"): one multi-row `INSERT` per call, on the driver's pool or
 * inside the caller's transaction, the ids returned in order.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import type { PublishRow } from "@rowclaim/core/driver";
import { normalizeError } from "./normalize-error.js";
import type { QueryableLike, ResultHeaderLike } from "./pool-like.js";
import type { ServerInfo } from "./server-info.js";
import { type Bound, insertStatement } from "./sql.js";

/** Inserts `rows` on `client` and returns their ids in order, without committing. */
export async function publishRows(
  client: QueryableLike,
  server: ServerInfo,
  table: TableDefinition,
  rows: readonly PublishRow[],
): Promise<readonly RowId[]> {
  if (rows.length === 0) return [];
  const insert = insertStatement(table, server.version.family, rows);
  assertFitsPacket(table, insert, server.maxAllowedPacket);
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

/** The client to publish on: a `mysql2/promise` connection, or a callback one's `.promise()`; else `InvalidArgumentError`. */
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

/**
 * Refuses a publish over `max_allowed_packet` before it is sent: the server would close the
 * session, and the mistake often come back as `CONNECTION_LOST`. The bytes counted are the fewest
 * the statement takes (mysql2 sends a `Buffer` as hexadecimal, a string quoted, others as ≥ 1 byte).
 */
function assertFitsPacket(table: TableDefinition, insert: Bound, maxAllowedPacket: number): void {
  let bytes = Buffer.byteLength(insert.sql);
  for (const value of insert.values) {
    if (Buffer.isBuffer(value)) bytes += value.byteLength * 2 + 3;
    else if (typeof value === "string") bytes += Buffer.byteLength(value) + 2;
    else bytes += 1;
  }
  if (bytes <= maxAllowedPacket) return;
  throw new InvalidArgumentError(
    `publish(${table.name}): the INSERT would be at least ${bytes} bytes, over the server's max_allowed_packet of ${maxAllowedPacket} bytes (bytes payloads travel as hexadecimal, twice their size). Nothing was sent. Publish fewer or smaller rows (large files belong outside the queue table), or raise max_allowed_packet on the server.`,
    { table: table.name },
  );
}

/** mysql2's result header carries the server's status flags. */
const SERVER_STATUS_IN_TRANS = 1;
const SERVER_STATUS_AUTOCOMMIT = 2;

/** Refuses, with `InvalidArgumentError`, a caller's connection outside a transaction, read from `DO 0`'s status flags. */
export async function assertInTransaction(client: QueryableLike, table: TableDefinition): Promise<void> {
  let header: unknown;
  try {
    [header] = await client.query("DO 0");
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation: "publish", statement: "DO 0" });
  }
  const status = (header as { serverStatus?: unknown }).serverStatus;
  if (typeof status !== "number") return;
  if ((status & SERVER_STATUS_IN_TRANS) !== 0 || (status & SERVER_STATUS_AUTOCOMMIT) === 0) return;
  throw new InvalidArgumentError(
    `publish(${table.name}, …, { client }): the connection is not inside a transaction (none was begun, or it already ended and the connection may be released), so the rows would commit at once. Call beginTransaction() on it first, and publish before commit().`,
    { table: table.name },
  );
}
