/**
 * The memory driver's operations capability: core's `OperationsDriver` over the memory
 * database, with the same meaning as the built-in drivers' SQL (a row lock or key held is seen
 * without waiting, a lease by its expiry, batches in id order).
 *
 * @module
 */
import { keyColumnOf, type RowFilter, type RowId, type RowState, type TableDefinition } from "@rowclaim/core";
import type {
  DriverRowActionResult,
  DriverRowQuery,
  OperationsDriver,
  PruneLock,
  StoredRow,
} from "@rowclaim/core/driver";
import { renderKey, unfinished } from "./claim-order.js";
import { claimedRowOf } from "./claimed-row.js";
import { type MemoryDatabase, type MemoryRow, type MemoryTable, rowKey, sameValue, timeOf } from "./store.js";

/** Tables being pruned, per database: the memory stand-in for the prune lock. */
const pruning = new WeakMap<MemoryDatabase, Set<string>>();

/** Builds the operations capability of a memory driver on `database`; `trip` is one round trip. */
export function memoryOperations(
  database: MemoryDatabase,
  trip: (table: string, method: string) => Promise<void>,
): OperationsDriver {
  return {
    features: { holderSessions: false, pruneLock: "a table name kept by the memory database" },
    async act(table, action) {
      await trip(table.name, "operations.act");
      const data = database.requireTable(table, "an operation");
      const keyColumn = keyColumnOf(table);
      const wanted =
        "ids" in action.selection
          ? (row: MemoryRow) =>
              (action.selection as { ids: readonly RowId[] }).ids.some((id) =>
                sameValue(row[table.columns.id], id),
              )
          : (row: MemoryRow) =>
              keyColumn !== undefined &&
              (action.selection as { keys: readonly string[] }).keys.includes(String(row[keyColumn]));
      const changed: RowId[] = [];
      const inWork: RowId[] = [];
      const keys = new Set<string>();
      for (const [key, row] of [...data.rows]) {
        if (!wanted(row)) continue;
        if (action.scope === "queued" && (!unfinished(table, row) || isDead(table, row, action.deadGroup)))
          continue;
        const id = row[table.columns.id] as RowId;
        if (keyColumn !== undefined && row[keyColumn] !== null) keys.add(String(row[keyColumn]));
        const owner = {};
        const advisoryKey =
          table.form === "advisory" && unfinished(table, row) ? renderKey(table, row) : undefined;
        if (
          held(database, table, data, key, row, action.now) ||
          (advisoryKey !== undefined && !database.tryKey(advisoryKey, owner))
        ) {
          inWork.push(id);
          continue;
        }
        if (action.kind === "delete") data.rows.delete(key);
        else if (table.columns.runAt !== undefined)
          data.rows.set(key, { ...row, [table.columns.runAt]: action.now });
        if (advisoryKey !== undefined) database.unlockKey(advisoryKey, owner);
        changed.push(id);
      }
      const result: DriverRowActionResult = { changed, inWork };
      return "keys" in action.selection ? { ...result, keys: [...keys] } : result;
    },
    async redrive(table, batch) {
      await trip(table.name, "operations.redrive");
      const { id, attempt, runAt, group, lockedUntil } = table.columns;
      const fromTable = "table" in batch.from ? batch.from.table : undefined;
      const source = database.requireTable(table, "a redrive", fromTable ?? table.name);
      const target = database.requireTable(table, "a redrive");
      const picked: [string, MemoryRow][] = [];
      for (const [key, row] of source.rows) {
        if (picked.length >= batch.limit) break;
        if ("group" in batch.from && (group === undefined || row[group] !== batch.from.group)) continue;
        if (batch.ids !== undefined && !batch.ids.some((wanted) => sameValue(row[id], wanted))) continue;
        if (batch.text !== undefined && !payloadText(table, row).includes(batch.text)) continue;
        if (source.locks.has(key)) continue;
        picked.push([key, row]);
      }
      const moved: MemoryRow[] = picked.map(([, row]) => {
        const next: Record<string, unknown> = { ...row };
        if (attempt !== undefined) next[attempt] = 1;
        if (runAt !== undefined) next[runAt] = batch.now;
        if (group !== undefined) next[group] = batch.group;
        if (lockedUntil !== undefined) next[lockedUntil] = null;
        return next;
      });
      if (fromTable === undefined) {
        for (const [index, [key]] of picked.entries()) source.rows.set(key, moved[index] as MemoryRow);
      } else {
        const inserted = moved.map((row) => {
          const values = { ...row };
          delete values[id];
          return target.newRow(values);
        });
        for (const [index, row] of inserted.entries()) target.check(row, undefined, inserted.slice(0, index));
        for (const row of inserted) target.rows.set(rowKey(row[id]), row);
        for (const [key] of picked) source.rows.delete(key);
      }
      return picked.length;
    },
    async prune(table, batch) {
      await trip(table.name, "operations.prune");
      const column = table.columns.processedAt;
      if (column === undefined) return 0;
      const data = database.requireTable(table, "a prune");
      const old = [...data.rows]
        .filter(([, row]) => {
          const at = timeOf(row[column]);
          return at !== null && at < batch.before.getTime();
        })
        .sort(([, a], [, b]) => (timeOf(a[column]) ?? 0) - (timeOf(b[column]) ?? 0))
        .slice(0, batch.limit);
      for (const [key] of old) data.rows.delete(key);
      return old.length;
    },
    async lockPrune(table): Promise<PruneLock | null> {
      await trip(table.name, "operations.lockPrune");
      const name = JSON.stringify([table.schema ?? null, table.name]);
      let names = pruning.get(database);
      if (names === undefined) {
        names = new Set();
        pruning.set(database, names);
      }
      if (names.has(name)) return null;
      names.add(name);
      const held = names;
      return {
        async release() {
          held.delete(name);
        },
      };
    },
    async list(table, query) {
      await trip(table.name, "operations.list");
      const data = database.requireTable(table, "a row listing");
      const out: StoredRow[] = [];
      for (const [key, row] of data.rows) {
        if (out.length >= query.limit) break;
        if (query.after !== undefined && !idAfter(row[table.columns.id], query.after)) continue;
        if (!matches(table, row, query.filter)) continue;
        const stored = storedRow(database, table, data, key, row, query.now);
        if (query.state !== undefined && stateOf(table, stored, row, query) !== query.state) continue;
        out.push(stored);
      }
      return out;
    },
    async count(table, query) {
      await trip(table.name, "operations.count");
      const data = database.requireTable(table, "a row count");
      let count = 0;
      for (const [key, row] of data.rows) {
        if (count >= query.cap) break;
        if (!matches(table, row, query.filter)) continue;
        const stored = storedRow(database, table, data, key, row, query.now);
        if (query.state !== undefined && stateOf(table, stored, row, query) !== query.state) continue;
        count += 1;
      }
      return count;
    },
    async detail(table, id, now) {
      await trip(table.name, "operations.detail");
      const data = database.requireTable(table, "reading a row");
      const key = rowKey(id);
      const row = data.rows.get(key);
      return row === undefined ? undefined : storedRow(database, table, data, key, row, now);
    },
  };
}

function isDead(table: TableDefinition, row: MemoryRow, deadGroup: string | null): boolean {
  const group = table.columns.group;
  return deadGroup !== null && group !== undefined && row[group] === deadGroup;
}

function held(
  database: MemoryDatabase,
  table: TableDefinition,
  data: MemoryTable,
  key: string,
  row: MemoryRow,
  now: Date,
): boolean {
  if (!unfinished(table, row)) return false;
  switch (table.form) {
    case "rowLock":
      return data.locks.has(key);
    case "lease": {
      const until = timeOf(row[table.columns.lockedUntil as string]);
      return until !== null && until > now.getTime();
    }
    case "advisory":
      return database.keyHeld(renderKey(table, row));
  }
}

function storedRow(
  database: MemoryDatabase,
  table: TableDefinition,
  data: MemoryTable,
  key: string,
  row: MemoryRow,
  now: Date,
): StoredRow {
  const claimed = claimedRowOf(table, row, false);
  const inWork = held(database, table, data, key, row, now);
  if (!inWork) return { ...claimed, inWork };
  switch (table.form) {
    case "lease":
      return {
        ...claimed,
        inWork,
        holder: { kind: "lease", until: new Date(timeOf(row[table.columns.lockedUntil as string]) ?? 0) },
      };
    case "rowLock":
      return { ...claimed, inWork, holder: { kind: "rowLock", session: null } };
    case "advisory":
      return {
        ...claimed,
        inWork,
        holder: { kind: "advisoryKey", key: renderKey(table, row), session: null },
      };
  }
}

function stateOf(
  table: TableDefinition,
  stored: StoredRow,
  row: MemoryRow,
  query: Pick<DriverRowQuery, "deadGroup" | "now">,
): RowState {
  if (!unfinished(table, row)) return "processed";
  if (isDead(table, row, query.deadGroup)) return "dead";
  if (stored.inWork) return "inWork";
  const runAt = table.columns.runAt === undefined ? null : timeOf(row[table.columns.runAt]);
  return runAt !== null && runAt > query.now.getTime() ? "delayed" : "due";
}

function payloadText(table: TableDefinition, row: MemoryRow): string {
  const value = row[table.columns.payload];
  return value instanceof Uint8Array ? new TextDecoder().decode(value) : String(value ?? "");
}

function matches(table: TableDefinition, row: MemoryRow, filter: RowFilter): boolean {
  if (filter.ids !== undefined && !filter.ids.some((id) => sameValue(row[table.columns.id], id)))
    return false;
  const keyColumn = keyColumnOf(table);
  if (filter.keys !== undefined && (keyColumn === undefined || !filter.keys.includes(String(row[keyColumn]))))
    return false;
  if (filter.text !== undefined && !payloadText(table, row).includes(filter.text)) return false;
  if (filter.group !== undefined && table.columns.group !== undefined) {
    const value = row[table.columns.group] ?? null;
    if (value !== filter.group) return false;
  }
  return true;
}

function idAfter(id: unknown, after: RowId): boolean {
  if (typeof id === "number" && (typeof after === "number" || typeof after === "bigint"))
    return id > Number(after);
  if (typeof id === "number" && typeof after === "string" && /^\d+$/.test(after)) return id > Number(after);
  return String(id) > String(after);
}
