/**
 * The SQLite schedule ledger (core's `ScheduleLedger`): a tick's ledger row and its queue row go
 * in one `BEGIN IMMEDIATE` transaction, which holds the file's write lock, so a second process's
 * `INSERT OR IGNORE` of the same tick runs after the first committed, ignores the duplicate and
 * publishes nothing. A busy file is retried as every other write of the driver is.
 *
 * @module
 */
import {
  type LedgerSchedule,
  type PublishRow,
  type RowId,
  SCHEDULE_LEDGER_TABLE,
  type ScheduleLedger,
  SchemaError,
  type TableDefinition,
} from "@rowclaim/core";
import { type BusyRetryPolicy, retryBusy } from "./busy-retry.js";
import type { SqliteDatabase } from "./database.js";
import { normalizeError } from "./normalize-error.js";
import { TablePublisher } from "./publish.js";
import { type ScheduleLedgerStatements, scheduleLedgerSchemaSql, scheduleLedgerSql } from "./schedule-sql.js";
import { inTransaction } from "./transaction.js";

/** Makes the ledger of a driver on `db`, retrying a busy file by `busy`. */
export function sqliteScheduleLedger(db: SqliteDatabase, busy: BusyRetryPolicy): ScheduleLedger {
  const publishers = new WeakMap<TableDefinition, TablePublisher>();
  const publisherFor = (table: TableDefinition): TablePublisher => {
    let publisher = publishers.get(table);
    if (publisher === undefined) {
      publisher = new TablePublisher(table);
      publishers.set(table, publisher);
    }
    return publisher;
  };
  const toDate = (value: unknown): Date | null =>
    value === null || value === undefined ? null : new Date(Number(value));
  const guarded = async <T>(table: TableDefinition, operation: string, work: () => T): Promise<T> => {
    try {
      return await retryBusy(db, busy, work);
    } catch (error) {
      throw normalizeError(error, { table: table.name, operation });
    }
  };
  // Built once per schema the ledger serves, never per tick.
  const built = new Map<string | undefined, ScheduleLedgerStatements>();
  const statementsFor = (table: TableDefinition): ScheduleLedgerStatements => {
    let statements = built.get(table.schema);
    if (statements === undefined) {
      statements = scheduleLedgerSql(table.schema);
      built.set(table.schema, statements);
    }
    return statements;
  };
  return {
    async check(table) {
      const found = await guarded(table, "checking the schedule ledger", () =>
        db
          .prepare(statementsFor(table).exists)
          .get({ ledger: SCHEDULE_LEDGER_TABLE, schema: table.schema ?? null }),
      );
      if (found === undefined) {
        throw new SchemaError(
          `The schedule ledger table "${SCHEDULE_LEDGER_TABLE}" does not exist${table.schema === undefined ? "" : ` in database "${table.schema}"`}, which schedules of table "${table.name}" need. Create it: ${scheduleLedgerSchemaSql(table.schema).trim()} (also printed by \`rowclaim schema --schedules\`).`,
          { table: table.name, statement: "checking the schedule ledger" },
        );
      }
    },
    async lastTick(table, name) {
      const row = await guarded(table, "reading the schedule's last tick", () =>
        db.prepare(statementsFor(table).lastTick).get({ table: table.name, schedule: name }),
      );
      return toDate((row as { tick_ms?: unknown } | undefined)?.tick_ms);
    },
    publishTick(table, name, tick, row: PublishRow): Promise<RowId | null> {
      const sql = statementsFor(table);
      return guarded(table, "publishing a tick", () =>
        inTransaction(db, "immediate", () => {
          const recorded = db
            .prepare(sql.recordTick)
            .run({ table: table.name, schedule: name, tick: tick.getTime() });
          if (recorded.changes !== 1) return null;
          return publisherFor(table).publish(db, [row])[0] ?? null;
        }),
      );
    },
    async prune(table, name, before) {
      await guarded(table, "pruning the schedule ledger", () =>
        db
          .prepare(statementsFor(table).prune)
          .run({ table: table.name, schedule: name, tick: before.getTime() }),
      );
    },
    async list(table): Promise<readonly LedgerSchedule[]> {
      const rows = (await guarded(table, "listing schedules", () =>
        db.prepare(statementsFor(table).list).all({ table: table.name }),
      )) as Record<string, unknown>[];
      return rows.map((found) => ({
        name: String(found.schedule_name),
        lastTick: toDate(found.last_tick_ms) as Date,
        ticks: Number(found.ticks),
      }));
    },
    schemaSql: scheduleLedgerSchemaSql,
  };
}
