/**
 * Reads a queue table's counts for `status` (and the demo's final check): read-only, one
 * statement, times compared with the host's clock as the drivers compare them.
 *
 * @module
 */
import type { AdminConnection } from "./admin-connection.js";
import {
  columnListSql,
  type StatusColumns,
  type StatusOptions,
  statusCountSql,
  timeParam,
} from "./admin-sql.js";
import { standardColumns } from "./tables.js";

/** The counts of one group of a table (or of the whole table, when it has no group column). */
export interface GroupStatus {
  /** The group, or `null` (rows without a group, or a table without a group column). */
  readonly group: string | null;
  /** Every row of the group. */
  readonly total: number;
  /** Due now: not processed, not leased, `runAt` empty or past. */
  readonly due: number;
  /** In work in the lease form: not processed, `lockedUntil` in the future. */
  readonly leased: number;
  /** Due later: not processed, not leased, `runAt` in the future. */
  readonly scheduled: number;
  /** Marked in `processedAt` (kept after ack). */
  readonly processed: number;
  /** In the dead-letter group (known from a table description or `--dead-letter-group`). */
  readonly dead: number;
}

/** The status of one table. */
export interface TableStatus {
  /** The table's name. */
  readonly table: string;
  /** The role columns found in the table (and so counted). */
  readonly columns: StatusColumns;
  /** One entry per group, ordered by group. */
  readonly groups: readonly GroupStatus[];
}

/** A table `status` was asked about does not exist. */
export class TableNotFoundError extends Error {
  constructor(table: string) {
    super(`Table "${table}" does not exist in this database (or has no columns the connection can see).`);
    this.name = "TableNotFoundError";
  }
}

/**
 * Counts the rows of `table` by group: due, leased, scheduled, processed. The role columns are
 * the command line's standard names (`queue`, `run_at`, `processed_at`, `locked_until`) unless
 * `names` says otherwise (with `standardNames: false`, only the roles `names` gives: a table
 * description's own columns); roles whose column the table lacks are not counted.
 *
 * @throws {TableNotFoundError} when the table does not exist.
 */
export async function readTableStatus(
  admin: AdminConnection,
  table: string,
  names: Partial<Record<keyof StatusColumns, string>> = {},
  now: Date = new Date(),
  options: { readonly standardNames?: boolean } & StatusOptions = {},
): Promise<TableStatus> {
  const fallback = options.standardNames ?? true;
  const present = new Set(
    (await admin.query(columnListSql(admin.dialect), [table])).map((row) => String(row.name)),
  );
  if (present.size === 0) throw new TableNotFoundError(table);
  const columns: { -readonly [K in keyof StatusColumns]: string } = {};
  for (const role of ["group", "runAt", "processedAt", "lockedUntil"] as const) {
    const name = names[role] ?? (fallback ? standardColumns[role] : undefined);
    if (name !== undefined && present.has(name)) columns[role] = name;
  }
  const statement = statusCountSql(
    admin.dialect,
    table,
    columns,
    timeParam(admin.dialect, now),
    options.deadGroup === undefined ? {} : { deadGroup: options.deadGroup },
  );
  const rows = await admin.query(statement.sql, statement.params);
  const groups = rows
    .map((row) => ({
      group: row.grp === null || row.grp === undefined ? null : String(row.grp),
      total: count(row.total),
      due: count(row.due),
      leased: count(row.leased),
      scheduled: count(row.scheduled),
      processed: count(row.processed),
      dead: count(row.dead),
    }))
    .filter((group) => group.total > 0)
    // Rows without a group first, then groups by name: the same order on every database.
    .sort((a, b) =>
      a.group === b.group ? 0 : a.group === null ? -1 : b.group === null ? 1 : a.group < b.group ? -1 : 1,
    );
  return { table, columns, groups };
}

function count(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return Number(value);
}
