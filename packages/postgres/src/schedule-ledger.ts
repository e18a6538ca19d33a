/**
 * The PostgreSQL schedule ledger (core's `ScheduleLedger`): a tick's ledger row and its queue
 * row go in one transaction on one connection; a second process's insert of the same tick
 * waits for the first to commit, then inserts nothing, so it publishes nothing.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  type LedgerSchedule,
  ledgerTick,
  missingLedgerError,
  type PublishRow,
  perLedgerSchema,
  type ScheduleLedger,
} from "@rowclaim/core/driver";
import { HeldConnection } from "./connection.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import type { Publisher } from "./publish.js";
import { ledgerRef, scheduleLedgerSchemaSql, scheduleLedgerSql } from "./schedule-sql.js";
import { beginSql, commitSql, rollbackSql } from "./sql.js";

/** Makes the ledger of a driver on `pool`, whose queue rows `publisher` inserts. */
export function postgresScheduleLedger(pool: PoolLike, publisher: Publisher): ScheduleLedger {
  const fail = (table: TableDefinition, statement: string) => (error: unknown) => {
    throw normalizeError(error, { table: table.name, form: "schedule", statement });
  };
  const statementsFor = perLedgerSchema(scheduleLedgerSql);
  return {
    async check(table) {
      const result = await pool
        .query({ text: statementsFor(table).exists, values: [ledgerRef(table.schema)] })
        .catch(fail(table, "checking the schedule ledger"));
      if (result.rows[0]?.present !== true) {
        throw missingLedgerError(table, scheduleLedgerSchemaSql(table.schema), "schema");
      }
    },
    async lastTick(table, name) {
      const result = await pool
        .query({ text: statementsFor(table).lastTick, values: [table.name, name] })
        .catch(fail(table, "reading the schedule's last tick"));
      return ledgerTick(result.rows[0]?.tick_ms);
    },
    async publishTick(table, name, tick, row: PublishRow): Promise<RowId | null> {
      const sql = statementsFor(table);
      const connection = await HeldConnection.acquire(pool).catch(fail(table, "publishing a tick"));
      try {
        await connection.text(beginSql(undefined));
        const recorded = await connection.query({
          text: sql.recordTick,
          values: [table.name, name, tick.getTime()],
        });
        let id: RowId | null = null;
        if (recorded.rowCount === 1) id = (await publisher.publish(table, [row], connection))[0] ?? null;
        await connection.text(commitSql);
        return id;
      } catch (error) {
        await connection.text(rollbackSql).catch(() => undefined);
        throw normalizeError(error, { table: table.name, form: "schedule", statement: "publishing a tick" });
      } finally {
        connection.release();
      }
    },
    async prune(table, name, before) {
      await pool
        .query({ text: statementsFor(table).prune, values: [table.name, name, before.getTime()] })
        .catch(fail(table, "pruning the schedule ledger"));
    },
    async list(table): Promise<readonly LedgerSchedule[]> {
      const result = await pool
        .query({ text: statementsFor(table).list, values: [table.name] })
        .catch(fail(table, "listing schedules"));
      return result.rows.map((found) => ({
        name: String(found.schedule_name),
        lastTick: ledgerTick(found.last_tick_ms) as Date,
        ticks: Number(found.ticks),
      }));
    },
    schemaSql: scheduleLedgerSchemaSql,
  };
}
