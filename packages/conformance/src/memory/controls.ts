/**
 * The memory driver's control table (`ControlStore` of `@rowclaim/core`): pauses and rate
 * counters kept beside a {@link MemoryDatabase}, so that every driver on one database sees the
 * same ones, as processes on one server do. It is the reference for what each SQL driver's
 * `controls-sql.ts` does in one statement.
 *
 * @module
 */
import { CONTROL_TABLE, type ControlRow, type ControlStore, type RateTake } from "@rowclaim/core/driver";
import type { MemoryDatabase } from "./store.js";

interface MutableControlRow {
  paused: boolean;
  rateWindow: number | null;
  rateCount: number;
  rateLimit: number | null;
  rateIntervalMs: number | null;
}

/** The control rows of each database: by table key, then by scope text. */
const controlTables = new WeakMap<MemoryDatabase, Map<string, Map<string, MutableControlRow>>>();

function rowsOf(database: MemoryDatabase): Map<string, Map<string, MutableControlRow>> {
  let rows = controlTables.get(database);
  if (rows === undefined) {
    rows = new Map();
    controlTables.set(database, rows);
  }
  return rows;
}

function rowOf(database: MemoryDatabase, table: string, scope: string): MutableControlRow {
  const tables = rowsOf(database);
  let scopes = tables.get(table);
  if (scopes === undefined) {
    scopes = new Map();
    tables.set(table, scopes);
  }
  let row = scopes.get(scope);
  if (row === undefined) {
    row = { paused: false, rateWindow: null, rateCount: 0, rateLimit: null, rateIntervalMs: null };
    scopes.set(scope, row);
  }
  return row;
}

/**
 * The control store of a memory driver on `database`; `trip` is the driver's round trip, awaited
 * before each call as a statement would be.
 */
export function memoryControlStore(
  database: MemoryDatabase,
  trip: (method: string) => Promise<void>,
): ControlStore {
  return {
    async setPaused(table, scope, paused) {
      await trip("controls.setPaused");
      rowOf(database, table, scope).paused = paused;
    },
    async read(table): Promise<readonly ControlRow[]> {
      await trip("controls.read");
      const scopes = rowsOf(database).get(table);
      if (scopes === undefined) return [];
      return [...scopes].map(([scope, row]) => ({ scope, ...row }));
    },
    async takeRate(table, scope, take: RateTake) {
      await trip("controls.takeRate");
      const row = rowOf(database, table, scope);
      let granted: number;
      if (row.rateWindow === null || row.rateWindow < take.window) {
        granted = Math.min(take.want, take.limit);
        row.rateWindow = take.window;
        row.rateCount = granted;
      } else if (row.rateWindow === take.window) {
        granted = Math.max(0, Math.min(take.want, take.limit - row.rateCount));
        row.rateCount += granted;
      } else {
        granted = 0;
      }
      row.rateLimit = take.limit;
      row.rateIntervalMs = take.intervalMs;
      return granted;
    },
    async returnRate(table, scope, window, count) {
      await trip("controls.returnRate");
      const row = rowsOf(database).get(table)?.get(scope);
      if (row === undefined || row.rateWindow !== window) return;
      row.rateCount = Math.max(0, row.rateCount - count);
    },
    async ensure() {
      await trip("controls.ensure");
    },
    schemaSql: () =>
      `CREATE TABLE IF NOT EXISTS ${CONTROL_TABLE} (table_name text, scope text, paused boolean, rate_window bigint, rate_count integer, rate_limit integer, rate_interval_ms integer, PRIMARY KEY (table_name, scope));`,
  };
}
