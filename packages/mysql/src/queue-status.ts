/**
 * The MySQL/MariaDB status reader (`driver.queueStatus`) over the statements of `status-sql.ts`.
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
import { normalizeError } from "./normalize-error.js";
import type { PoolLike, QueryableLike } from "./pool-like.js";
import { transactionSql } from "./sql.js";
import {
  type GroupFilter,
  type InWorkCondition,
  inWorkCandidatesSql,
  rowLockProbeSql,
  statusCountSql,
} from "./status-sql.js";

/** What the row lock probe cannot see, for people. */
const ROW_LOCK_LIMIT =
  "MySQL/MariaDB do not list the row locks a transaction holds: rows in work are found by a SKIP LOCKED probe over the first open rows in claim order (up to the cap), and the connection holding each is not known";

async function query(client: QueryableLike, table: TableDefinition, sql: string, values: unknown[]) {
  try {
    const [rows] = await client.query(sql, values);
    return rows as Record<string, unknown>[];
  } catch (error) {
    throw normalizeError(error, { table: table.name, operation: "status read", statement: sql });
  }
}

function toRow(table: TableDefinition, row: Record<string, unknown>): InWorkRow {
  return inWorkRowOf(table, {
    id: row.id,
    grp: row.grp,
    attempt: row.attempt,
    session: row.holder,
    lockedUntil: table.form === "lease" && row.locked_until instanceof Date ? row.locked_until : null,
    key: table.form === "advisory" ? row.lock_name : null,
  });
}

/** The status reader over `pool`. */
export function mysqlStatusReader(pool: PoolLike): QueueStatusReader {
  /** The rows in work of one group (or every group), at most `limit`. */
  const findInWork = async (
    table: TableDefinition,
    filter: GroupFilter,
    now: Date,
    limit: number,
  ): Promise<FoundInWork> => {
    if (table.form === "rowLock") {
      const connection = await pool.getConnection();
      try {
        const window = inWorkCandidatesSql(table, filter, now, limit);
        const all = await query(connection, table, window.sql, window.values);
        await query(connection, table, transactionSql.isolation("read committed"), []);
        await query(connection, table, transactionSql.begin, []);
        try {
          const probe = rowLockProbeSql(table, filter, limit);
          const free = new Set(
            (await query(connection, table, probe.sql, probe.values)).map((row) => String(row.id)),
          );
          const held = all.filter((row) => !free.has(String(row.id))).map((row) => toRow(table, row));
          return { rows: held, capped: all.length >= limit };
        } finally {
          await query(connection, table, transactionSql.rollback, []);
        }
      } finally {
        connection.release();
      }
    }
    // Lease: unexpired leases; advisory: per held lock name, its first row in claim order.
    const candidates = inWorkCandidatesSql(table, filter, now, limit + 1);
    const found = await query(pool, table, candidates.sql, candidates.values);
    return foundInWork(
      table,
      found.map((row) => toRow(table, row)),
      limit,
    );
  };
  const filterOf = (table: TableDefinition, group: string | null | undefined): GroupFilter => {
    const filter = groupFilterOf(table, group);
    return filter === "named" ? { named: group as string } : filter;
  };
  return {
    async countGroups(table: TableDefinition, statusQuery: StatusQuery): Promise<TableCounts> {
      const { now, cap, deadGroup } = statusQuery;
      let inWork: InWorkCondition = { lease: now };
      let inWorkCapped = false;
      if (table.form !== "lease") {
        const found = await findInWork(table, "all", now, cap);
        inWork = { ids: found.rows.map((row) => row.id) };
        inWorkCapped = found.capped;
      }
      const statement = statusCountSql(table, deadGroup, inWork, now);
      const rows = await query(pool, table, statement.sql, statement.values);
      const groups = rows.map((row) =>
        groupCountsOf(row, cap, row.oldest_due_at instanceof Date ? row.oldest_due_at : null, inWorkCapped),
      );
      return table.form === "rowLock"
        ? { groups, inWorkScope: "database", inWorkLimit: ROW_LOCK_LIMIT }
        : { groups, inWorkScope: "database" };
    },
    async listInWork(table: TableDefinition, inWorkQuery: InWorkQuery): Promise<readonly InWorkRow[]> {
      const { now, limit, group } = inWorkQuery;
      // The row lock probe looks at a window of open rows: wide enough to find `limit` held ones.
      const window = table.form === "rowLock" ? Math.max(limit, 1000) : limit;
      const found = await findInWork(table, filterOf(table, group), now, window);
      return found.rows.slice(0, limit);
    },
  };
}
