/**
 * The MySQL/MariaDB driver's operations capability (core's `OperationsDriver`): runs the
 * statements of `operations-sql.ts` on the driver's pool, each batch in one short transaction.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  type DriverRowActionResult,
  type OperationsDriver,
  onConnection,
  type PruneLock,
  type StoredRow,
  storedRowOf,
} from "@rowclaim/core/driver";
import { claimedRowOf } from "./claimed-row.js";
import { heldSession } from "./held-session.js";
import { normalizeError } from "./normalize-error.js";
import {
  actionCandidatesSql,
  actionChangeSql,
  actionScopeSql,
  countSql,
  inWorkInSql,
  type ListShape,
  listSql,
  lockableSql,
  pruneLockSql,
  pruneSql,
  pruneUnlockSql,
  redriveCandidatesSql,
  redriveDeleteSql,
  redriveGroupSql,
  redriveInsertSql,
} from "./operations-sql.js";
import { type ConnectionLike, letGo, type PoolLike, run, selectRows } from "./pool-like.js";
import { type Bound, lockSql } from "./sql.js";

/** Builds the operations capability over `pool` (the driver's bounded pool). */
export function mysqlOperations(pool: PoolLike): OperationsDriver {
  const session = heldSession(pool);
  const within = <T>(
    table: TableDefinition,
    doing: string,
    body: (connection: ConnectionLike) => Promise<T>,
    transaction = true,
  ): Promise<T> =>
    onConnection(session, body, {
      transaction,
      fail: (error) => normalizeError(error, { table: table.name, operation: doing }),
    });

  /** The rows of one read outside a transaction. */
  const read = (table: TableDefinition, doing: string, bound: Bound): Promise<unknown[][]> =>
    within(table, doing, (connection) => selectRows(connection, bound.sql, bound.values), false);

  /** Which of `ids` (row lock form) no other transaction holds. */
  const lockable = (table: TableDefinition, ids: readonly RowId[]): Promise<Set<string>> =>
    ids.length === 0
      ? Promise.resolve(new Set())
      : within(table, "operations (reading locks)", async (connection) => {
          const bound = lockableSql(table, ids);
          const rows = await selectRows(connection, bound.sql, bound.values);
          return new Set(rows.map((row) => String(row[0])));
        });

  const decode = (table: TableDefinition, values: unknown[], held?: boolean): StoredRow => {
    const count = table.allColumns.length;
    const row = claimedRowOf(table, values.slice(0, count), false);
    return storedRowOf(table, row, held ?? Number(values[count]) === 1, {
      session: values[count + 1],
      key: values[count + 2],
    });
  };

  /**
   * One page. In the row lock form a locking read tells which rows are held: the page is read in
   * windows until it is full or the table ends, each window's rows checked at once.
   */
  const page = async (table: TableDefinition, shape: ListShape): Promise<StoredRow[]> => {
    const needsLocks =
      !inWorkInSql(table) &&
      (shape.state === undefined ||
        shape.state === "due" ||
        shape.state === "delayed" ||
        shape.state === "inWork");
    if (!needsLocks) {
      const rows = await read(table, "operations list", listSql(table, shape));
      return rows.map((values) => decode(table, values));
    }
    const out: StoredRow[] = [];
    let after = shape.after;
    for (;;) {
      const window = Math.max(shape.limit, 100);
      const rows = await read(table, "operations list", listSql(table, { ...shape, after, limit: window }));
      const ids = rows.map((values) => values[table.allColumns.indexOf(table.columns.id)] as RowId);
      const free = await lockable(table, ids);
      for (const values of rows) {
        const row = decode(table, values, false);
        const held = !free.has(String(row.id)) && isQueued(table, row, shape.deadGroup);
        const stored = held ? decode(table, values, true) : row;
        if (shape.state === "inWork" && !held) continue;
        if ((shape.state === "due" || shape.state === "delayed") && held) continue;
        out.push(stored);
        if (out.length >= shape.limit) return out;
      }
      if (rows.length < window) return out;
      after = ids[ids.length - 1];
    }
  };

  return {
    features: { holderSessions: true, pruneLock: "GET_LOCK" },
    async act(table, action): Promise<DriverRowActionResult> {
      const keyed = "keys" in action.selection;
      return within(table, `operations ${action.kind}`, async (connection) => {
        const scope = actionScopeSql(table, action.selection, action.scope, action.deadGroup);
        const asked = await selectRows(connection, scope.sql, scope.values);
        const candidates = actionCandidatesSql(
          table,
          action.selection,
          action.scope,
          action.deadGroup,
          action.now,
        );
        const free = await selectRows(connection, candidates.sql, candidates.values);
        const locked: string[] = [];
        const changing: RowId[] = [];
        try {
          for (const [id, name] of free) {
            if (table.form === "advisory") {
              const got = await selectRows(connection, lockSql.get, [name]);
              if (Number(got[0]?.[0]) !== 1) continue;
              locked.push(String(name));
            }
            changing.push(id as RowId);
          }
          if (changing.length > 0) {
            const change = actionChangeSql(table, action.kind, changing, action.now);
            await run(connection, change.sql, change.values);
          }
        } finally {
          for (const name of locked) await selectRows(connection, lockSql.release, [name]);
        }
        const changedKeys = new Set(changing.map(String));
        const inWork = asked.map((row) => row[0] as RowId).filter((id) => !changedKeys.has(String(id)));
        const result: DriverRowActionResult = { changed: changing, inWork };
        return keyed
          ? {
              ...result,
              keys: [...new Set(asked.flatMap((row) => (typeof row[1] === "string" ? [row[1]] : [])))],
            }
          : result;
      });
    },
    async redrive(table, batch) {
      return within(table, "operations redrive", async (connection) => {
        const candidates = redriveCandidatesSql(table, batch.from, batch.ids, batch.text, batch.limit);
        const ids = (await selectRows(connection, candidates.sql, candidates.values)).map(
          (row) => row[0] as RowId,
        );
        if (ids.length === 0) return 0;
        if ("group" in batch.from) {
          const update = redriveGroupSql(table, ids, batch.group, batch.now);
          await run(connection, update.sql, update.values);
        } else {
          const insert = redriveInsertSql(table, batch.from.table, ids, batch.group, batch.now);
          await run(connection, insert.sql, insert.values);
          const remove = redriveDeleteSql(table, batch.from.table, ids);
          await run(connection, remove.sql, remove.values);
        }
        return ids.length;
      });
    },
    prune(table, batch) {
      const bound = pruneSql(table, batch.before, batch.limit);
      return within(
        table,
        "operations prune",
        async (connection) => (await run(connection, bound.sql, bound.values)).affectedRows,
        false,
      );
    },
    async lockPrune(table): Promise<PruneLock | null> {
      const connection = await pool.getConnection();
      try {
        const lock = pruneLockSql(table);
        const got = await selectRows(connection, lock.sql, lock.values);
        if (Number(got[0]?.[0]) !== 1) {
          letGo(connection, false);
          return null;
        }
      } catch (error) {
        letGo(connection, true);
        throw normalizeError(error, { table: table.name, operation: "operations prune lock" });
      }
      return {
        async release() {
          const unlock = pruneUnlockSql(table);
          try {
            await selectRows(connection, unlock.sql, unlock.values);
            letGo(connection, false);
          } catch {
            // Closing the session lets its lock go.
            letGo(connection, true);
          }
        },
      };
    },
    list: page,
    async count(table, query) {
      if (
        !inWorkInSql(table) &&
        (query.state === "due" || query.state === "delayed" || query.state === "inWork")
      ) {
        return (await page(table, { ...query, limit: query.cap })).length;
      }
      const rows = await read(table, "operations count", countSql(table, query, query.cap));
      return Number(rows[0]?.[0] ?? 0);
    },
  };
}

function isQueued(table: TableDefinition, row: StoredRow, deadGroup: string | null): boolean {
  const processedAt = table.columns.processedAt;
  if (processedAt !== undefined && row.row[processedAt] !== null && row.row[processedAt] !== undefined)
    return false;
  return deadGroup === null || row.group !== deadGroup;
}
