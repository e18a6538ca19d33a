/**
 * The PostgreSQL schedule ledger: a tick's ledger row and its queue row in one transaction; a
 * second insert of the tick waits for the first to commit, then inserts and publishes nothing.
 *
 * @module
 */
import type { RowId, TableDefinition } from "@rowclaim/core";
import {
  type LedgerSchedule,
  ledgerSchedulesOf,
  ledgerTick,
  missingLedgerError,
  onConnection,
  type PublishRow,
  perLedgerSchema,
  type ScheduleLedger,
} from "@rowclaim/core/driver";
import { heldSession } from "./held-session.js";
import { normalizeError } from "./normalize-error.js";
import type { PoolLike } from "./pool-like.js";
import type { Publisher } from "./publish.js";
import { ledgerRef, scheduleLedgerSchemaSql, scheduleLedgerSql } from "./schedule-sql.js";

/** Makes the ledger of a driver on `pool`, whose queue rows `publisher` inserts. */
export function postgresScheduleLedger(pool: PoolLike, publisher: Publisher): ScheduleLedger {
  const fail = (table: TableDefinition, statement: string) => (error: unknown) => {
    throw normalizeError(error, { table: table.name, operation: `schedule ${statement}` });
  };
  const statementsFor = perLedgerSchema(scheduleLedgerSql);
  const session = heldSession(pool);
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
      const acquire = () => session.acquire().catch(fail(table, "publishing a tick"));
      return onConnection(
        { ...session, acquire },
        async (connection) => {
          const recorded = await connection.query({
            text: sql.recordTick,
            values: [table.name, name, tick.getTime()],
          });
          return recorded.rowCount === 1
            ? ((await publisher.publish(table, [row], connection))[0] ?? null)
            : null;
        },
        {
          transaction: true,
          fail: (error) => normalizeError(error, { table: table.name, operation: "schedule tick publish" }),
        },
      );
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
      return ledgerSchedulesOf(result.rows);
    },
    schemaSql: scheduleLedgerSchemaSql,
  };
}
