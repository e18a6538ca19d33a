/**
 * The PostgreSQL status reader (`driver.queueStatus`, behind core's `readQueueStatus` and
 * `listInWork`): one grouped pass that counts every group (the figures capped here), and the rows
 * in work with the backend pid (or lease expiry) that holds each. Statements: `status-sql.ts`.
 *
 * @module
 */
import type { InWorkHolder, InWorkRow, RowId, TableDefinition } from "@rowclaim/core";
import type { InWorkQuery, QueueStatusReader, StatusQuery, TableCounts } from "@rowclaim/core/driver";
import { groupCountsOf } from "@rowclaim/core/driver";
import { normalizeError } from "./normalize-error.js";
import type { QueryableLike } from "./pool-like.js";
import {
  type GroupFilter,
  inWorkListSql,
  type StatusStatement,
  statusCountSql,
  statusKeyValues,
} from "./status-sql.js";

/** The status reader over `pool`. */
export function postgresStatusReader(pool: QueryableLike): QueueStatusReader {
  const run = async (
    table: TableDefinition,
    stmt: StatusStatement,
    values: Record<string, unknown>,
  ): Promise<Record<string, unknown>[]> => {
    const all = { ...statusKeyValues(table), ...values };
    try {
      const result = await pool.query({ text: stmt.text, values: stmt.params.map((name) => all[name]) });
      return result.rows;
    } catch (error) {
      throw normalizeError(error, { table: table.name, form: table.form, statement: "status read" });
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
      const filter: GroupFilter =
        query.group === undefined || table.columns.group === undefined
          ? "all"
          : query.group === null
            ? "none"
            : "named";
      const rows = await run(table, inWorkListSql(table, filter), {
        now: query.now,
        limit: query.limit,
        group: query.group ?? null,
      });
      return rows.map((row): InWorkRow => {
        const holder: { -readonly [K in keyof InWorkHolder]: InWorkHolder[K] } = { form: table.form };
        if (row.pid !== null && row.pid !== undefined) holder.session = String(row.pid);
        if (row.locked_until instanceof Date) holder.lockedUntil = row.locked_until;
        if (typeof row.rkey === "string") holder.key = row.rkey;
        const entry: InWorkRow = {
          id: row.id as RowId,
          group: row.grp === null || row.grp === undefined ? null : String(row.grp),
          holder,
        };
        return row.attempt === null || row.attempt === undefined
          ? entry
          : { ...entry, attempt: Number(row.attempt) };
      });
    },
  };
}
