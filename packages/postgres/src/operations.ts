/**
 * The PostgreSQL driver's operations capability (core's `OperationsDriver`): runs the
 * statements of `operations-sql.ts` on the driver's pool, each batch in one short transaction.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import type { DriverRowActionResult, OperationsDriver, PruneLock, StoredRow } from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import { HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import {
  countSql,
  detailSql,
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
import type { PoolLike } from "./pool-like.js";
import { advisoryKeyValues, type Statement, type StatementValues, statementValues } from "./sql.js";

/** Builds the operations capability over `pool` (the driver's statement pool). */
export function postgresOperations(pool: PoolLike): OperationsDriver {
  const run = async (
    table: TableDefinition,
    stmt: Statement,
    values: StatementValues,
    inTransaction: boolean,
  ): Promise<Record<string, unknown>[]> => {
    const connection = await HeldConnection.acquire(pool);
    try {
      if (inTransaction) await connection.text("BEGIN");
      const result = await connection.query({
        text: stmt.text,
        values: statementValues(stmt, { ...advisoryKeyValues(table), ...values }),
      });
      if (inTransaction) await connection.text("COMMIT");
      return result.rows;
    } catch (error) {
      if (inTransaction) await connection.text("ROLLBACK").catch(() => undefined);
      throw normalizeError(error, { table: table.name, form: table.form, statement: stmt.purpose });
    } finally {
      connection.release();
    }
  };
  const stored = (table: TableDefinition, raw: Record<string, unknown>): StoredRow => {
    const row = claimedRowOf(table, raw, false);
    const inWork = raw[IN_WORK_ALIAS] === true;
    if (!inWork) return { ...row, inWork };
    const until = table.columns.lockedUntil;
    if (table.form === "lease" && until !== undefined)
      return { ...row, inWork, holder: { kind: "lease", until: asDate(raw[until]) } };
    if (table.form === "advisory")
      return {
        ...row,
        inWork,
        holder: {
          kind: "advisoryKey",
          key: String(raw[KEY_ALIAS]),
          session: raw[HOLDER_ALIAS] === null ? null : String(raw[HOLDER_ALIAS]),
        },
      };
    return { ...row, inWork, holder: { kind: "rowLock", session: null } };
  };
  return {
    features: { holderSessions: true, pruneLock: "pg_try_advisory_xact_lock, held in an open transaction" },
    async act(table, action): Promise<DriverRowActionResult> {
      const by = "ids" in action.selection ? "ids" : "keys";
      const stmt = rowActionSql(table, action.kind, action.scope, by, action.deadGroup);
      const rows = await run(
        table,
        stmt,
        {
          ...("ids" in action.selection ? { ids: action.selection.ids } : { keys: action.selection.keys }),
          deadGroup: action.deadGroup,
          now: action.now,
        },
        true,
      );
      const changed: RowId[] = [];
      const inWork: RowId[] = [];
      const keys = new Set<string>();
      for (const row of rows) {
        const id = row.rc_id as RowId;
        if (row.rc_changed === true) changed.push(id);
        else inWork.push(id);
        if (typeof row.rc_key === "string") keys.add(row.rc_key);
      }
      return by === "keys" ? { changed, inWork, keys: [...keys] } : { changed, inWork };
    },
    async redrive(table, batch) {
      const withIds = batch.ids !== undefined;
      const withText = batch.text !== undefined;
      const stmt =
        "group" in batch.from
          ? redriveGroupSql(table, withIds, withText)
          : redriveTableSql(table, batch.from.table, withIds, withText);
      const connection = await HeldConnection.acquire(pool);
      try {
        await connection.text("BEGIN");
        const result = await connection.query({
          text: stmt.text,
          values: statementValues(stmt, {
            from: "group" in batch.from ? batch.from.group : null,
            ids: batch.ids ?? null,
            text: batch.text ?? null,
            group: batch.group,
            limit: batch.limit,
            now: batch.now,
          }),
        });
        await connection.text("COMMIT");
        return result.rowCount ?? 0;
      } catch (error) {
        await connection.text("ROLLBACK").catch(() => undefined);
        throw normalizeError(error, { table: table.name, form: table.form, statement: stmt.purpose });
      } finally {
        connection.release();
      }
    },
    async prune(table, batch) {
      const stmt = pruneSql(table);
      const connection = await HeldConnection.acquire(pool);
      try {
        const result = await connection.query({
          text: stmt.text,
          values: statementValues(stmt, { before: batch.before, limit: batch.limit }),
        });
        return result.rowCount ?? 0;
      } catch (error) {
        throw normalizeError(error, { table: table.name, form: table.form, statement: stmt.purpose });
      } finally {
        connection.release();
      }
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
        throw normalizeError(error, { table: table.name, form: table.form, statement: pruneLockSql.purpose });
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
      const rows = await run(
        table,
        stmt,
        {
          ids: query.filter.ids ?? null,
          keys: query.filter.keys ?? null,
          text: query.filter.text ?? null,
          group: query.filter.group ?? null,
          deadGroup: query.deadGroup,
          after: query.after ?? null,
          limit: query.limit,
          now: query.now,
        },
        false,
      );
      return rows.map((raw) => stored(table, raw));
    },
    async count(table, query) {
      const stmt = countSql(table, { state: query.state, filter: query.filter, deadGroup: query.deadGroup });
      const rows = await run(
        table,
        stmt,
        {
          ids: query.filter.ids ?? null,
          keys: query.filter.keys ?? null,
          text: query.filter.text ?? null,
          group: query.filter.group ?? null,
          deadGroup: query.deadGroup,
          cap: query.cap,
          now: query.now,
        },
        false,
      );
      return Number(rows[0]?.rc_count ?? 0);
    },
    async detail(table, id, now) {
      const rows = await run(table, detailSql(table), { id, now }, false);
      const raw = rows[0];
      return raw === undefined ? undefined : stored(table, raw);
    },
  };
}

function asDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}
