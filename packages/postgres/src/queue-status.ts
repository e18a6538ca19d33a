/**
 * The PostgreSQL status reader (`driver.queueStatus`) over the statements of `status-sql.ts`.
 *
 * @module
 */
import type { InWorkRow, TableDefinition } from "@rowclaim/core";
import {
  groupCountsOf,
  groupFilterOf,
  type InWorkQuery,
  inWorkRowOf,
  type QueueStatusReader,
  type StatusQuery,
  type TableCounts,
} from "@rowclaim/core/driver";
import { normalizeError } from "./normalize-error.js";
import type { QueryableLike } from "./pool-like.js";
import { advisoryKeyValues } from "./sql.js";
import { inWorkListSql, type StatusStatement, statusCountSql } from "./status-sql.js";

/** The status reader over `pool`. */
export function postgresStatusReader(pool: QueryableLike): QueueStatusReader {
  const run = async (
    table: TableDefinition,
    stmt: StatusStatement,
    values: Record<string, unknown>,
  ): Promise<Record<string, unknown>[]> => {
    const all = { ...advisoryKeyValues(table), ...values };
    try {
      const result = await pool.query({ text: stmt.text, values: stmt.params.map((name) => all[name]) });
      return result.rows;
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "status read" });
    }
  };
  return {
    async countGroups(table: TableDefinition, query: StatusQuery): Promise<TableCounts> {
      const { deadGroup } = query;
      const statement = statusCountSql(table, deadGroup !== undefined);
      const rows = await run(
        table,
        statement,
        deadGroup === undefined ? { now: query.now } : { now: query.now, dead: deadGroup },
      );
      const groups = rows.map((row) => {
        const oldest = row.oldest_due_at;
        const oldestDueAt =
          oldest instanceof Date
            ? oldest
            : oldest === null || oldest === undefined
              ? null
              : new Date(String(oldest));
        return groupCountsOf(row, query.cap, oldestDueAt);
      });
      return { groups, inWorkScope: "database" };
    },
    async listInWork(table: TableDefinition, query: InWorkQuery): Promise<readonly InWorkRow[]> {
      const filter = groupFilterOf(table, query.group);
      const rows = await run(table, inWorkListSql(table, filter), {
        now: query.now,
        limit: query.limit,
        group: query.group ?? null,
      });
      return rows.map((row) =>
        inWorkRowOf(table, {
          id: row.id,
          grp: row.grp,
          attempt: row.attempt,
          session: row.pid,
          lockedUntil: row.locked_until instanceof Date ? row.locked_until : null,
          key: typeof row.rkey === "string" ? row.rkey : null,
        }),
      );
    },
  };
}
