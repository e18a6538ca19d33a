/**
 * The memory driver's schedule ledger (core's `ScheduleLedger`): the ledger table exists once
 * its `schemaSql` ran (`executeSql`); its ticks are kept beside it, by table, schedule and tick.
 * Recording a tick and inserting its row happen in one synchronous step after the call's round
 * trip, so brokers on one memory database publish each tick once, as one transaction would.
 *
 * @module
 */
import { type RowId, SchemaError, type TableDefinition } from "@rowclaim/core";
import {
  type LedgerSchedule,
  type PublishRow,
  SCHEDULE_LEDGER_TABLE,
  type ScheduleLedger,
} from "@rowclaim/core/driver";
import { insertRows } from "./publish.js";
import { quoteIdentifier } from "./schema.js";
import type { MemoryDatabase, MemoryTable } from "./store.js";

/** The ticks each ledger table holds: by queue table, then schedule, the tick instants (epoch ms). */
const ledgers = new WeakMap<MemoryTable, Map<string, Map<string, Set<number>>>>();

/** The `CREATE TABLE` of the memory ledger in `schema`. */
export function memoryLedgerSchemaSql(schema: string | undefined): string {
  const name = quoteIdentifier(SCHEDULE_LEDGER_TABLE);
  const ref = schema === undefined ? name : `${quoteIdentifier(schema)}.${name}`;
  return `CREATE TABLE IF NOT EXISTS ${ref} (\n  "table_name" text NOT NULL,\n  "schedule_name" text NOT NULL,\n  "tick_ms" bigint NOT NULL\n);\n`;
}

/**
 * Makes the ledger of a memory driver on `database`; `call` is awaited first by every method
 * (the driver's closed check and round trip).
 */
export function memoryScheduleLedger(
  database: MemoryDatabase,
  call: (table: TableDefinition, method: string) => Promise<void>,
): ScheduleLedger {
  const ticksOf = (table: TableDefinition, doing: string): Map<string, Set<number>> => {
    const ledger = database.table(SCHEDULE_LEDGER_TABLE, table.schema);
    if (ledger === undefined) {
      throw new SchemaError(
        `The schedule ledger table "${SCHEDULE_LEDGER_TABLE}" does not exist${table.schema === undefined ? "" : ` in schema "${table.schema}"`}, which schedules of table "${table.name}" need (${doing}). Create it: ${memoryLedgerSchemaSql(table.schema).trim()}`,
        { table: table.name, statement: doing },
      );
    }
    let byTable = ledgers.get(ledger);
    if (byTable === undefined) {
      byTable = new Map();
      ledgers.set(ledger, byTable);
    }
    let bySchedule = byTable.get(table.name);
    if (bySchedule === undefined) {
      bySchedule = new Map();
      byTable.set(table.name, bySchedule);
    }
    return bySchedule;
  };
  const latest = (ticks: ReadonlySet<number>): number => Math.max(...ticks);
  return {
    async check(table) {
      await call(table, "checkScheduleLedger");
      ticksOf(table, "checking the schedule ledger");
    },
    async lastTick(table, name) {
      await call(table, "lastTick");
      const ticks = ticksOf(table, "reading the schedule's last tick").get(name);
      return ticks === undefined || ticks.size === 0 ? null : new Date(latest(ticks));
    },
    async publishTick(table, name, tick, row: PublishRow): Promise<RowId | null> {
      await call(table, "publishTick");
      const schedules = ticksOf(table, "publishing a tick");
      const ticks = schedules.get(name) ?? new Set<number>();
      if (ticks.has(tick.getTime())) return null;
      const [id] = insertRows(database, table, [row]);
      ticks.add(tick.getTime());
      schedules.set(name, ticks);
      return id ?? null;
    },
    async prune(table, name, before) {
      await call(table, "pruneScheduleLedger");
      const ticks = ticksOf(table, "pruning the schedule ledger").get(name);
      if (ticks === undefined || ticks.size === 0) return;
      const keep = latest(ticks);
      for (const tick of ticks) if (tick < before.getTime() && tick !== keep) ticks.delete(tick);
    },
    async list(table): Promise<readonly LedgerSchedule[]> {
      await call(table, "listSchedules");
      return [...ticksOf(table, "listing schedules")]
        .filter(([, ticks]) => ticks.size > 0)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, ticks]) => ({ name, lastTick: new Date(latest(ticks)), ticks: ticks.size }));
    },
    schemaSql: memoryLedgerSchemaSql,
  };
}
