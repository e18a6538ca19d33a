/**
 * The SQLite driver's operations capability (core's `OperationsDriver`): the statements of
 * `operations-sql.ts`, each batch in one `IMMEDIATE` transaction. A row in work is told by its
 * lease's expiry, or by the advisory keys this process holds; where another process owns the
 * file's advisory form, a change to an advisory table is refused.
 *
 * @module
 */
import { type RowId, type TableDefinition, UnsupportedFormError } from "@rowclaim/core";
import {
  type DriverRowActionResult,
  type DriverRowCount,
  type DriverRowQuery,
  decodeClaimedRow,
  type OperationsDriver,
  rowActionResultOf,
  type StoredRow,
  storedRowOf,
} from "@rowclaim/core/driver";
import { advisoryOwnedElsewhere } from "./advisory-owner.js";
import { type BusyRetryPolicy, retryBusyAs } from "./busy-retry.js";
import type { SqliteDatabase } from "./database.js";
import { heldKeys } from "./keys.js";
import {
  actionChangeSql,
  actionScopeSql,
  countSql,
  listSql,
  pruneSql,
  redriveCandidatesSql,
  redriveDeleteSql,
  redriveGroupSql,
  redriveInsertSql,
} from "./operations-sql.js";
import { lockPrune } from "./prune-lock.js";
import { advisoryKeySql } from "./sql.js";
import { inTransaction } from "./transaction.js";

/** Builds the operations capability over `db`. */
export function sqliteOperations(db: SqliteDatabase, busy: BusyRetryPolicy): OperationsDriver {
  const guarded = <T>(table: TableDefinition, operation: string, work: () => T): Promise<T> =>
    retryBusyAs(db, busy, { table: table.name, operation }, work);
  const common = (table: TableDefinition, now: Date): Record<string, unknown> => ({
    ...advisoryKeySql(table).literals,
    now: now.getTime(),
    held: JSON.stringify([...heldKeys(db)]),
  });
  const refuseForeignKeys = (table: TableDefinition, doing: string): void => {
    if (table.form === "advisory" && advisoryOwnedElsewhere(db)) {
      throw new UnsupportedFormError(
        `Table "${table.name}" takes the advisory lock form, and another process owns the advisory form on "${db.name}": SQLite keeps advisory keys in that process, so this one cannot tell which rows are in work, and ${doing} would risk a row in work. Run it in the process that runs the subscriptions, or while none runs.`,
        { table: table.name },
      );
    }
  };
  const stored = (table: TableDefinition, raw: Record<string, unknown>): StoredRow => {
    const values: Record<string, unknown> = {};
    for (const column of table.allColumns) values[column] = raw[column];
    return storedRowOf(table, decodeClaimedRow(table, values, false), Number(raw.rc_in_work) === 1, {
      key: raw.rc_akey,
      session: "this process",
    });
  };
  /** The parameters of a list or count. */
  const filterValues = (table: TableDefinition, query: DriverRowCount | DriverRowQuery) => ({
    ...common(table, query.now),
    ids: JSON.stringify((query.filter.ids ?? []).map(bindable)),
    keys: JSON.stringify(query.filter.keys ?? []),
    text: query.filter.text ?? null,
    group: query.filter.group ?? null,
    deadGroup: query.deadGroup,
  });
  return {
    features: {
      holderSessions: false,
      pruneLock: "an exclusive transaction on the companion file <file>-rowclaim-prune",
    },
    act(table, action) {
      const by = "ids" in action.selection ? "ids" : "keys";
      return guarded(table, `operations ${action.kind}`, () => {
        refuseForeignKeys(table, action.kind === "delete" ? "a delete" : "a retry");
        return inTransaction(db, "immediate", (): DriverRowActionResult => {
          const params = {
            ...common(table, action.now),
            ids: JSON.stringify("ids" in action.selection ? action.selection.ids.map(bindable) : []),
            keys: JSON.stringify("keys" in action.selection ? action.selection.keys : []),
            deadGroup: action.deadGroup,
          };
          const asked = db
            .prepare(actionScopeSql(table, by, action.scope, action.deadGroup))
            .all(params) as Record<string, unknown>[];
          const result = rowActionResultOf(
            asked.map((row) => ({
              id: row.rc_id as RowId,
              changed: Number(row.rc_in_work) !== 1,
              key: row.rc_key,
            })),
            by === "keys",
          );
          if (result.changed.length > 0)
            db.prepare(actionChangeSql(table, action.kind)).run({
              ids: JSON.stringify(result.changed.map(bindable)),
              now: action.now.getTime(),
            });
          return result;
        });
      });
    },
    redrive(table, batch) {
      return guarded(table, "operations redrive", () =>
        inTransaction(db, "immediate", () => {
          const candidates = db
            .prepare(
              redriveCandidatesSql(table, batch.from, batch.ids !== undefined, batch.text !== undefined),
            )
            .all({
              from: "group" in batch.from ? batch.from.group : null,
              ids: JSON.stringify((batch.ids ?? []).map(bindable)),
              text: batch.text ?? null,
              limit: batch.limit,
            }) as { rc_id: RowId }[];
          if (candidates.length === 0) return 0;
          const ids = JSON.stringify(candidates.map((row) => bindable(row.rc_id)));
          const values = { ids, now: batch.now.getTime(), group: batch.group };
          if ("group" in batch.from) {
            db.prepare(redriveGroupSql(table)).run(values);
          } else {
            db.prepare(redriveInsertSql(table, batch.from.table)).run(values);
            db.prepare(redriveDeleteSql(table, batch.from.table)).run({ ids });
          }
          return candidates.length;
        }),
      );
    },
    prune(table, batch) {
      return guarded(table, "operations prune", () =>
        inTransaction(
          db,
          "immediate",
          () =>
            db.prepare(pruneSql(table)).run({ before: batch.before.getTime(), limit: batch.limit }).changes,
        ),
      );
    },
    async lockPrune(table) {
      return lockPrune(db, table);
    },
    list(table, query) {
      return guarded(table, "operations list", () => {
        const rows = db.prepare(listSql(table, { ...query, after: query.after !== undefined })).all({
          ...filterValues(table, query),
          after: query.after === undefined ? null : bindable(query.after),
          limit: query.limit,
        }) as Record<string, unknown>[];
        return rows.map((raw) => stored(table, raw));
      });
    },
    count(table, query) {
      return guarded(table, "operations count", () => {
        const row = db.prepare(countSql(table, query)).get({
          ...filterValues(table, query),
          cap: query.cap,
        }) as { rc_count?: unknown } | undefined;
        return Number(row?.rc_count ?? 0);
      });
    },
  };
}

/** An id as JSON can carry it (a bigint as its decimal text). */
function bindable(id: RowId): string | number {
  return typeof id === "bigint" ? id.toString() : id;
}
