/**
 * Unique publishes on PostgreSQL: each row one statement of {@link uniquePublishSql}, in order,
 * retried by core's `retryUniqueAttempt`; one `pg_notify` after the rows when the driver notifies.
 *
 * @module
 */
import type { PublishResult, RowId, TableDefinition } from "@rowclaim/core";
import { retryUniqueAttempt, StatementCache, type UniquePublishRow } from "@rowclaim/core/driver";
import { execute } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import { MAX_CACHED_SHAPES } from "./publish.js";
import type { Statement } from "./sql.js";
import { uniquePublishSql } from "./unique-sql.js";

const retried = new Set(["40001", "40P01", "23505"]);

/** Publishes unique rows of `table` on `pool`; see the driver contract's `publishUnique`. */
export class UniquePublisher {
  readonly #pool: PoolLike;
  readonly #channelFor: ((table: TableDefinition) => string) | null;
  readonly #cache = new StatementCache<Statement>(MAX_CACHED_SHAPES);

  /** @param channelFor the NOTIFY channel of a table, or `null` to send no notification. */
  constructor(pool: PoolLike, channelFor: ((table: TableDefinition) => string) | null) {
    this.#pool = pool;
    this.#channelFor = channelFor;
  }

  /** Publishes `rows`, in order, and returns what happened to each. */
  async publish(table: TableDefinition, rows: readonly UniquePublishRow[]): Promise<PublishResult[]> {
    const results: PublishResult[] = [];
    try {
      for (const row of rows) results.push(await this.#one(table, row));
      if (this.#channelFor !== null && results.some((result) => result.outcome !== "kept")) {
        await this.#pool.query({ text: "SELECT pg_notify($1::text, '')", values: [this.#channelFor(table)] });
      }
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "unique publish" });
    }
    return results;
  }

  async #one(table: TableDefinition, row: UniquePublishRow): Promise<PublishResult> {
    const extras = table.extraColumns.filter((column) => row.values[column] !== undefined);
    const replace = row.key !== null && row.onConflict === "replace";
    const stmt = this.#statement(table, replace, extras, row.priority !== null);
    const values: Record<string, unknown> = {
      payload: typeof row.payload === "string" ? row.payload : Buffer.from(row.payload),
      group: row.group,
      runAt: row.runAt,
      priority: row.priority,
      headers: row.headers,
      key: row.key,
    };
    extras.forEach((column, index) => {
      values[`extra${index}`] = row.values[column];
    });
    return retryUniqueAttempt({
      attempt: async (): Promise<PublishResult | undefined> => {
        const found = (await execute(this.#pool, stmt, values)).rows[0];
        if (found === undefined) return undefined;
        const id = found.rc_id as RowId;
        if (found.rc_inserted === true) return { id, outcome: "inserted" };
        return { id, outcome: replace ? "replaced" : "kept" };
      },
      retried: (error) => {
        const code = (error as { code?: unknown }).code;
        return typeof code === "string" && retried.has(code);
      },
      exhausted: (last) =>
        last ?? new Error(`unique publish of table "${table.name}": the key's holder kept changing`),
    });
  }

  #statement(
    table: TableDefinition,
    replace: boolean,
    extras: readonly string[],
    priority: boolean,
  ): Statement {
    return this.#cache.get(JSON.stringify([table.schema, table.name, replace, extras, priority]), () =>
      uniquePublishSql(table, replace, extras, priority),
    );
  }
}
