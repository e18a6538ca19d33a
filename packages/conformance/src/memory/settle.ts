/**
 * Settlements as changes to stored rows: what each settlement writes in each form (the row lock
 * form counts the attempt of a row it keeps; the lease form clears `lockedUntil`), checked
 * against the tables' constraints when planned and applied later (at once, or at a row lock
 * batch's commit).
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type { Settlement } from "@rowclaim/core/driver";
import type { MemoryDatabase, MemoryRow, MemoryTable } from "./store.js";

/** The form a settlement is applied in. */
export type SettleForm = "rowLock" | "lease" | "advisory";

/** Rows a transaction will insert when it commits, by table: constraints see them already. */
export type PendingInserts = Map<MemoryTable, MemoryRow[]>;

/** A checked settlement, not applied yet. */
export type PlannedWrite = () => void;

/**
 * Plans `settlement` of the row stored under `key` (which must exist): checks the constraints
 * of every table it writes and returns the write. Applied later, the write changes the row as it
 * is then (a row gone meanwhile stays gone).
 *
 * @throws {ConstraintError} when the write would break a constraint; nothing changed.
 * @throws {SchemaError} when a dead-letter table does not exist.
 */
export function planSettlement(
  database: MemoryDatabase,
  table: TableDefinition,
  data: MemoryTable,
  key: string,
  settlement: Settlement,
  form: SettleForm,
  pending: PendingInserts = new Map(),
): PlannedWrite {
  const row = data.rows.get(key) as MemoryRow;
  const { attempt, runAt, group, processedAt, lockedUntil, id } = table.columns;
  const kept = (own: Record<string, unknown>): Record<string, unknown> => {
    const changes = { ...own };
    if (form === "lease" && lockedUntil !== undefined) changes[lockedUntil] = null;
    return changes;
  };
  // A row lock write counts the attempt from the row as it is when applied (at the commit).
  const update = (changes: Record<string, unknown>): PlannedWrite => {
    data.check({ ...row, ...changes }, key);
    return () => {
      const now = data.rows.get(key);
      if (now === undefined) return;
      const next: Record<string, unknown> = { ...now, ...changes };
      if (form === "rowLock" && attempt !== undefined) next[attempt] = Number(now[attempt]) + 1;
      data.rows.set(key, next);
    };
  };
  switch (settlement.kind) {
    case "delete":
      return () => {
        data.rows.delete(key);
      };
    case "markProcessed":
      return update(kept({ [processedAt as string]: settlement.at }));
    case "release":
      return update(
        kept(runAt === undefined || settlement.runAt === null ? {} : { [runAt]: settlement.runAt }),
      );
    case "moveToGroup":
      return update(kept({ [group as string]: settlement.group }));
    case "moveToTable": {
      const target = database.requireTable(table, `moving a row to "${settlement.table}"`, settlement.table);
      const values: Record<string, unknown> = {};
      for (const column of table.allColumns) {
        if (column === id || column === lockedUntil) continue;
        values[column] =
          column === attempt && form === "rowLock" ? Number(row[column]) + 1 : (row[column] ?? null);
      }
      const copy = target.newRow(values);
      const waiting = pending.get(target) ?? [];
      target.check(copy, undefined, waiting);
      pending.set(target, [...waiting, copy]);
      return () => {
        if (!data.rows.delete(key)) return;
        target.rows.set(String(copy[serialColumn(target, id)]), copy);
      };
    }
  }
}

/** The column a table numbers its rows by (its serial column), else the source's id column's name. */
function serialColumn(target: MemoryTable, fallback: string): string {
  for (const column of target.columns.values()) if (column.serial === true) return column.name;
  return fallback;
}
