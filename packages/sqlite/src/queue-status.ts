/**
 * The SQLite status reader (`driver.queueStatus`, behind core's `readQueueStatus` and
 * `listInWork`): the rows in work (lease: unexpired leases; advisory: the first row of each key
 * this process holds), then one grouped pass that counts every group (`status-sql.ts`).
 *
 * @module
 */
import type { InWorkRow, TableDefinition } from "@rowclaim/core";
import {
  type FoundInWork,
  foundInWork,
  groupCountsOf,
  groupFilterOf,
  type InWorkQuery,
  inWorkRowOf,
  type QueueStatusReader,
  type StatusQuery,
  type TableCounts,
} from "@rowclaim/core/driver";
import type { SqliteDatabase } from "./database.js";
import { heldKeys } from "./keys.js";
import { normalizeError } from "./normalize-error.js";
import { advisoryKeySql } from "./sql.js";
import { type GroupFilter, inWorkCandidatesSql, statusCountSql } from "./status-sql.js";

/** What the advisory figures cannot see, for people. */
const ADVISORY_LIMIT =
  "SQLite has no advisory locks: keys live in the process that took them, so only this process's keys are seen (another process's rows in work count as due)";

type Values = Record<string, unknown>;

/** The status reader over `db`. */
export function sqliteStatusReader(db: SqliteDatabase): QueueStatusReader {
  const all = (table: TableDefinition, sql: string, values: Values): Values[] => {
    try {
      return db.prepare(sql).all({ ...advisoryKeySql(table).literals, ...values }) as Values[];
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation: "status read", statement: sql });
    }
  };
  const findInWork = (
    table: TableDefinition,
    filter: GroupFilter,
    group: string | null,
    now: Date,
    limit: number,
  ): FoundInWork => {
    const values: Values = { now: now.getTime(), limit: limit + 1 };
    if (filter === "named") values.group = group;
    if (table.form === "advisory") values.held = JSON.stringify([...heldKeys(db)]);
    const found = all(table, inWorkCandidatesSql(table, filter), values).map((row) =>
      inWorkRowOf(table, {
        id: row.id,
        grp: row.grp,
        attempt: row.attempt,
        ...(table.form === "advisory"
          ? { key: String(row.rkey), session: "this process" }
          : { lockedUntil: typeof row.locked_until === "number" ? new Date(row.locked_until) : null }),
      }),
    );
    return foundInWork(table, found, limit);
  };
  return {
    async countGroups(table: TableDefinition, query: StatusQuery): Promise<TableCounts> {
      const { now, cap, deadGroup } = query;
      // Nothing is in work in a form the driver does not run (a row lock table read by status).
      const values: Values = { now: now.getTime(), dead: deadGroup ?? null, inWork: "[]" };
      let inWorkCapped = false;
      if (table.form === "advisory") {
        const found = findInWork(table, "all", null, now, cap);
        values.inWork = JSON.stringify(found.rows.map((row) => row.id));
        inWorkCapped = found.capped;
      }
      const groups = all(table, statusCountSql(table), values).map((row) => {
        const oldest = row.oldest_due_at;
        return groupCountsOf(row, cap, typeof oldest === "number" ? new Date(oldest) : null, inWorkCapped);
      });
      return table.form === "advisory"
        ? { groups, inWorkScope: "process", inWorkLimit: ADVISORY_LIMIT }
        : { groups, inWorkScope: "database" };
    },
    async listInWork(table: TableDefinition, query: InWorkQuery): Promise<readonly InWorkRow[]> {
      const filter = groupFilterOf(table, query.group);
      return findInWork(table, filter, query.group ?? null, query.now, query.limit).rows;
    },
  };
}
