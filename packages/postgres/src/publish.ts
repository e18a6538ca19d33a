/**
 * Publishing: one multi-row `INSERT … RETURNING id`, in the caller's transaction when it passes
 * its client (checked to be inside one), with `pg_notify` in the same statement under `notify: true`.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import { type PublishRow, rowsPerStatement, StatementCache, statementChunks } from "@rowclaim/core/driver";
import { execute, HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike, QueryableLike } from "./pool-like.js";
import { beginSql, commitSql, type PublishShape, publishSql, rollbackSql, type Statement } from "./sql.js";

/** PostgreSQL takes at most 65,535 parameters a statement; larger publishes go in chunks, in one transaction. */
const MAX_PARAMS = 60_000;
/** The most statement shapes a publisher keeps (see `StatementCache`). */
export const MAX_CACHED_SHAPES = 64;

/** Builds and keeps the publish statements of each shape (row count, which optional values are given). */
export class Publisher {
  readonly #pool: PoolLike;
  readonly #channelFor: ((table: TableDefinition) => string) | null;
  readonly #cache = new StatementCache<Statement>(MAX_CACHED_SHAPES);

  /** @param channelFor the NOTIFY channel of a table, or `null` to send no notification. */
  constructor(pool: PoolLike, channelFor: ((table: TableDefinition) => string) | null) {
    this.#pool = pool;
    this.#channelFor = channelFor;
  }

  /** Inserts `rows` into `table` and returns their ids in order; in `client`'s transaction when given. */
  async publish(table: TableDefinition, rows: readonly PublishRow[], client: unknown): Promise<RowId[]> {
    if (rows.length === 0) return [];
    const given = client === undefined ? undefined : asQueryable(table, client);
    const chunks = statementChunks(rows, rowsPerStatement(5 + table.extraColumns.length, MAX_PARAMS));
    try {
      if (given !== undefined) {
        const inside = await inTransaction(table, given);
        try {
          return await this.#insertChunks(inside, table, chunks);
        } catch (error) {
          // `pg` reads the failed status from the server's next ReadyForQuery, which may not have
          // arrived when the caller caught the failed statement: the server's refusal says it.
          if ((error as { code?: unknown }).code === IN_FAILED_TRANSACTION) throw failedTransaction(table);
          throw error;
        }
      }
      if (chunks.length === 1) return await this.#insertChunks(this.#pool, table, chunks);
      const connection = await HeldConnection.acquire(this.#pool);
      try {
        await connection.text(beginSql(undefined));
        const ids = await this.#insertChunks(connection, table, chunks);
        await connection.text(commitSql);
        return ids;
      } catch (error) {
        await connection.text(rollbackSql).catch(() => undefined);
        throw error;
      } finally {
        connection.release();
      }
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "publish" });
    }
  }

  async #insertChunks(
    queryable: QueryableLike,
    table: TableDefinition,
    chunks: readonly PublishRow[][],
  ): Promise<RowId[]> {
    const ids: RowId[] = [];
    for (const chunk of chunks) {
      const { stmt, values } = this.#prepare(table, chunk);
      const result = await execute(queryable, stmt, values);
      for (const row of result.rows) ids.push(row.rc_id as RowId);
    }
    return ids;
  }

  #prepare(
    table: TableDefinition,
    rows: readonly PublishRow[],
  ): { stmt: Statement; values: Record<string, unknown> } {
    const extras = table.extraColumns
      .map((column) => ({ column, given: rows.map((row) => row.values[column] !== undefined) }))
      .filter((extra) => extra.given.some(Boolean));
    const shape: PublishShape = {
      rows: rows.length,
      priority: rows.map((row) => row.priority !== null),
      extras,
      notifyChannel: this.#channelFor === null ? null : this.#channelFor(table),
    };
    const stmt = this.#cache.get(JSON.stringify([table.schema, table.name, shape]), () =>
      publishSql(table, shape),
    );
    const values: Record<string, unknown> = { channel: shape.notifyChannel };
    rows.forEach((row, index) => {
      values[`payload${index}`] = typeof row.payload === "string" ? row.payload : toBuffer(row.payload);
      values[`group${index}`] = row.group;
      values[`runAt${index}`] = row.runAt;
      values[`priority${index}`] = row.priority;
      values[`headers${index}`] = row.headers;
      extras.forEach((extra, extraIndex) => {
        values[`extra${extraIndex}_${index}`] = row.values[extra.column];
      });
    });
    return { stmt, values };
  }
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function asQueryable(table: TableDefinition, client: unknown): QueryableLike {
  if (
    typeof client === "object" &&
    client !== null &&
    typeof (client as { query?: unknown }).query === "function"
  ) {
    return client as QueryableLike;
  }
  throw new InvalidArgumentError(
    `publish(${table.name}, …, { client }): the PostgreSQL driver takes a pg client (pg.Client or a pg.PoolClient) inside a transaction you opened with BEGIN.`,
    { table: table.name },
  );
}

/** A client whose transaction status `pg` reports (`pg.Client#getTransactionStatus`, pg 8.12+). */
interface StatusReporting extends QueryableLike {
  /** `"I"` idle, `"T"` in a transaction, `"E"` in a failed transaction; `null` before the first statement. */
  getTransactionStatus(): string | null;
}

function reportsStatus(client: QueryableLike): client is StatusReporting {
  return typeof (client as { getTransactionStatus?: unknown }).getTransactionStatus === "function";
}

/** SQLSTATE `in_failed_sql_transaction`: a statement sent in a transaction that already failed. */
const IN_FAILED_TRANSACTION = "25P02";

/** The refusal of a publish on a client whose transaction failed. */
function failedTransaction(table: TableDefinition): InvalidArgumentError {
  return new InvalidArgumentError(
    `publish(${table.name}, …, { client }): the client's transaction failed (an earlier statement in it was refused) and must be rolled back; nothing can be published in it.`,
    { table: table.name },
  );
}

/**
 * Refuses a pool, or a client outside a transaction (its rows would commit at once) or in a failed
 * one. A client reporting idle is asked once more (`SELECT 1`, queued behind the caller's
 * statements); one that reports no status (an older `pg`) is taken as it is.
 */
async function inTransaction(table: TableDefinition, client: QueryableLike): Promise<QueryableLike> {
  if ("totalCount" in client && "idleCount" in client) {
    throw new InvalidArgumentError(
      `publish(${table.name}, …, { client }): client is a pool, not a client inside a transaction; the rows would commit at once. Check a client out (await pool.connect()), send BEGIN on it, and pass that client.`,
      { table: table.name },
    );
  }
  if (!reportsStatus(client)) return client;
  let status = client.getTransactionStatus();
  if (status !== "T" && status !== "E") {
    await client.query({ text: "SELECT 1" });
    status = client.getTransactionStatus();
  }
  if (status === "T") return client;
  if (status === "E") throw failedTransaction(table);
  throw new InvalidArgumentError(
    `publish(${table.name}, …, { client }): the client is not inside a transaction (BEGIN was not sent, or the transaction already ended and the client may be released), so the rows would commit at once. Send BEGIN on the client first, and publish before COMMIT.`,
    { table: table.name },
  );
}
