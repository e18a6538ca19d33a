/**
 * The SQLite schedule ledger (core's `ScheduleLedger`): a tick's ledger row and its queue row go
 * in one `BEGIN IMMEDIATE` transaction, so a second process's `INSERT OR IGNORE` of the same tick
 * runs after the first committed and publishes nothing.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  type LedgerSchedule,
  ledgerSchedulesOf,
  ledgerTick,
  missingLedgerError,
  type PublishRow,
  perLedgerSchema,
  SCHEDULE_LEDGER_TABLE,
  type ScheduleLedger,
} from "@rowclaim/core/driver";
import { type BusyRetryPolicy, retryBusyAs } from "./busy-retry.js";
import type { SqliteDatabase } from "./database.js";
import { publisherOf } from "./publish.js";
import { scheduleLedgerSchemaSql, scheduleLedgerSql } from "./schedule-sql.js";
import { inTransaction } from "./transaction.js";

/** Makes the ledger of a driver on `db`, retrying a busy file by `busy`. */
export function sqliteScheduleLedger(db: SqliteDatabase, busy: BusyRetryPolicy): ScheduleLedger {
  const guarded = <T>(table: TableDefinition, operation: string, work: () => T): Promise<T> =>
    retryBusyAs(db, busy, { table: table.name, operation }, work);
  const statementsFor = perLedgerSchema(scheduleLedgerSql);
  return {
    async check(table) {
      const found = await guarded(table, "checking the schedule ledger", () =>
        db
          .prepare(statementsFor(table).exists)
          .get({ ledger: SCHEDULE_LEDGER_TABLE, schema: table.schema ?? null }),
      );
      if (found === undefined) {
        throw missingLedgerError(table, scheduleLedgerSchemaSql(table.schema), "database");
      }
    },
    async lastTick(table, name) {
      const row = await guarded(table, "reading the schedule's last tick", () =>
        db.prepare(statementsFor(table).lastTick).get({ table: table.name, schedule: name }),
      );
      return ledgerTick((row as { tick_ms?: unknown } | undefined)?.tick_ms);
    },
    publishTick(table, name, tick, row: PublishRow): Promise<RowId | null> {
      const sql = statementsFor(table);
      return guarded(table, "publishing a tick", () =>
        inTransaction(db, "immediate", () => {
          const recorded = db
            .prepare(sql.recordTick)
            .run({ table: table.name, schedule: name, tick: tick.getTime() });
          if (recorded.changes !== 1) return null;
          return publisherOf(table).publish(db, [row])[0] ?? null;
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
      return ledgerSchedulesOf(rows);
    },
    schemaSql: scheduleLedgerSchemaSql,
  };
}
