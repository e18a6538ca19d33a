/**
 * The MySQL/MariaDB schedule ledger (core's `ScheduleLedger`, DRIVERS.md "Schedules"): a tick's
 * `INSERT IGNORE` and its queue row in one transaction, retried after a deadlock.
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
import { normalizeError } from "./normalize-error.js";
import { type PoolLike, type QueryableLike, run } from "./pool-like.js";
import { publishRows } from "./publish.js";
import { withDeadlockRetry } from "./retry.js";
import { scheduleLedgerSchemaSql, scheduleLedgerSql } from "./schedule-sql.js";
import type { ServerInfo } from "./server-info.js";
import { transactionSql } from "./sql.js";
import { commitAndRelease, rollbackAndRelease } from "./transaction.js";

/** Runs a query and returns its rows as objects by column name. */
async function selectRows(
  client: QueryableLike,
  sql: string,
  values: unknown[],
): Promise<Record<string, unknown>[]> {
  const [rows] = await client.query({ sql, values });
  return rows as Record<string, unknown>[];
}

/** Makes the ledger of a driver on `pool` (bounded), on the server `serverInfo` reads. */
export function mysqlScheduleLedger(pool: PoolLike, serverInfo: () => Promise<ServerInfo>): ScheduleLedger {
  const fail =
    (table: TableDefinition, operation: string) =>
    (error: unknown): never => {
      throw normalizeError(error, { table: table.name, operation });
    };
  const statementsFor = perLedgerSchema(scheduleLedgerSql);
  return {
    async check(table) {
      const rows = await selectRows(pool, statementsFor(table).exists, [
        table.schema ?? null,
        SCHEDULE_LEDGER_TABLE,
      ]).catch(fail(table, "checking the schedule ledger"));
      if (Number(rows[0]?.present ?? 0) === 0) {
        throw missingLedgerError(table, scheduleLedgerSchemaSql(table.schema), "database");
      }
    },
    async lastTick(table, name) {
      const rows = await selectRows(pool, statementsFor(table).lastTick, [table.name, name]).catch(
        fail(table, "reading the schedule's last tick"),
      );
      return ledgerTick(rows[0]?.tick_ms);
    },
    async publishTick(table, name, tick, row: PublishRow): Promise<RowId | null> {
      const sql = statementsFor(table);
      const server = await serverInfo().catch(fail(table, "publishing a tick"));
      const once = async (): Promise<RowId | null> => {
        const connection = await pool.getConnection().catch(fail(table, "publishing a tick"));
        try {
          await run(connection, transactionSql.begin);
          const recorded = await run(connection, sql.recordTick, [table.name, name, tick.getTime()]);
          const id =
            recorded.affectedRows === 1
              ? ((await publishRows(connection, server, table, [row]))[0] ?? null)
              : null;
          await commitAndRelease(connection);
          return id;
        } catch (error) {
          await rollbackAndRelease(connection, error).catch(() => undefined);
          throw error;
        }
      };
      return withDeadlockRetry(once).catch(fail(table, "publishing a tick"));
    },
    async prune(table, name, before) {
      await run(pool, statementsFor(table).prune, [
        table.name,
        name,
        before.getTime(),
        table.name,
        name,
      ]).catch(fail(table, "pruning the schedule ledger"));
    },
    async list(table): Promise<readonly LedgerSchedule[]> {
      const rows = await selectRows(pool, statementsFor(table).list, [table.name]).catch(
        fail(table, "listing schedules"),
      );
      return ledgerSchedulesOf(rows);
    },
    schemaSql: scheduleLedgerSchemaSql,
  };
}
