/**
 * The PostgreSQL driver's operations capability (core's `OperationsDriver`): runs the
 * statements of `operations-sql.ts` on the driver's pool, each batch in one short transaction.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  type DriverRowActionResult,
  type DriverRowQuery,
  type OperationsDriver,
  onConnection,
  type PruneLock,
  rowActionResultOf,
  type StoredRow,
  storedRowOf,
} from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import { HeldConnection } from "./connection.js";
import { heldSession } from "./held-session.js";
import { normalizeError } from "./normalize-error.js";
import {
  countSql,
  HOLDER_ALIAS,
  IN_WORK_ALIAS,
  KEY_ALIAS,
  listSql,
  pruneLockKey,
  pruneLockSql,
  pruneSql,
  redriveGroupSql,
  redriveTableSql,
  rowActionSql,
} from "./operations-sql.js";
import type { PoolLike, QueryResultLike } from "./pool-like.js";
import { advisoryKeyValues, type Statement, type StatementValues, statementValues } from "./sql.js";

/** Builds the operations capability over `pool` (the driver's statement pool). */
export function postgresOperations(pool: PoolLike): OperationsDriver {
  const session = heldSession(pool);
  const run = (
    table: TableDefinition,
    stmt: Statement,
    values: StatementValues,
    transaction: boolean,
  ): Promise<QueryResultLike> =>
    onConnection(
      session,
      (connection) =>
        connection.query({
          text: stmt.text,
          values: statementValues(stmt, { ...advisoryKeyValues(table), ...values }),
        }),
      {
        transaction,
        fail: (error) => normalizeError(error, { table: table.name, operation: stmt.purpose }),
      },
    );
  const filterValues = ({
    filter,
    deadGroup,
    now,
  }: Pick<DriverRowQuery, "filter" | "deadGroup" | "now">) => ({
    ids: filter.ids ?? null,
    keys: filter.keys ?? null,
    text: filter.text ?? null,
    group: filter.group ?? null,
    deadGroup,
    now,
  });
  const stored = (table: TableDefinition, raw: Record<string, unknown>): StoredRow =>
    storedRowOf(table, claimedRowOf(table, raw, false), raw[IN_WORK_ALIAS] === true, {
      key: raw[KEY_ALIAS],
      session: raw[HOLDER_ALIAS],
    });
  return {
    features: { holderSessions: true, pruneLock: "pg_try_advisory_xact_lock, held in an open transaction" },
    async act(table, action): Promise<DriverRowActionResult> {
      const by = "ids" in action.selection ? "ids" : "keys";
      const stmt = rowActionSql(table, action.kind, action.scope, by, action.deadGroup);
      const { rows } = await run(
        table,
        stmt,
        {
          ...("ids" in action.selection ? { ids: action.selection.ids } : { keys: action.selection.keys }),
          deadGroup: action.deadGroup,
          now: action.now,
        },
        true,
      );
      return rowActionResultOf(
        rows.map((row) => ({ id: row.rc_id as RowId, changed: row.rc_changed === true, key: row.rc_key })),
        by === "keys",
      );
    },
    async redrive(table, batch) {
      const withIds = batch.ids !== undefined;
      const withText = batch.text !== undefined;
      const stmt =
        "group" in batch.from
          ? redriveGroupSql(table, withIds, withText)
          : redriveTableSql(table, batch.from.table, withIds, withText);
      const result = await run(
        table,
        stmt,
        {
          from: "group" in batch.from ? batch.from.group : null,
          ids: batch.ids ?? null,
          text: batch.text ?? null,
          group: batch.group,
          limit: batch.limit,
          now: batch.now,
        },
        true,
      );
      return result.rowCount ?? 0;
    },
    async prune(table, batch) {
      const result = await run(table, pruneSql(table), { before: batch.before, limit: batch.limit }, false);
      return result.rowCount ?? 0;
    },
    async lockPrune(table): Promise<PruneLock | null> {
      const connection = await HeldConnection.acquire(pool);
      try {
        await connection.text("BEGIN");
        const result = await connection.query({
          text: pruneLockSql.text,
          values: statementValues(pruneLockSql, { key: pruneLockKey(table) }),
        });
        if (result.rows[0]?.rc_locked !== true) {
          await connection.text("ROLLBACK");
          connection.release();
          return null;
        }
      } catch (error) {
        await connection.text("ROLLBACK").catch(() => undefined);
        connection.release();
        throw normalizeError(error, { table: table.name, operation: pruneLockSql.purpose });
      }
      return {
        async release() {
          await connection.text("ROLLBACK").catch(() => undefined);
          connection.release();
        },
      };
    },
    async list(table, query) {
      const stmt = listSql(table, {
        state: query.state,
        filter: query.filter,
        deadGroup: query.deadGroup,
        after: query.after !== undefined,
      });
      const values = { ...filterValues(query), after: query.after ?? null, limit: query.limit };
      const { rows } = await run(table, stmt, values, false);
      return rows.map((raw) => stored(table, raw));
    },
    async count(table, query) {
      const stmt = countSql(table, { state: query.state, filter: query.filter, deadGroup: query.deadGroup });
      const { rows } = await run(table, stmt, { ...filterValues(query), cap: query.cap }, false);
      return Number(rows[0]?.rc_count ?? 0);
    },
  };
}
