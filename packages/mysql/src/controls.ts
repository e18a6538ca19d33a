/**
 * The MySQL/MariaDB driver's control store: core's `ControlTable` over `controls-sql.ts`, each
 * statement run again after a deadlock (a Galera certification conflict). No watch.
 *
 * @module
 */
import { type ControlStatements, ControlTable } from "@rowclaim/core/driver";
import {
  controlsPresentSql,
  controlsReadSql,
  controlsReturnRateSql,
  controlsSchemaSql,
  controlsSetPausedSql,
  controlsSetPausedValues,
  controlsTakeRateSql,
  controlsTakeRateValues,
} from "./controls-sql.js";
import { normalizeError } from "./normalize-error.js";
import type { QueryableLike, ResultHeaderLike } from "./pool-like.js";
import { withDeadlockRetry } from "./retry.js";

/** The MySQL/MariaDB control statements, each one query on `pool`. */
function mysqlControlStatements(pool: QueryableLike): ControlStatements {
  const run = async (table: string, what: string, sql: string, values: unknown[]): Promise<unknown> => {
    try {
      const [result] = await withDeadlockRetry(() => pool.query(sql, values));
      return result;
    } catch (error) {
      throw normalizeError(error, { table, operation: `control table ${what}`, statement: sql });
    }
  };
  return {
    async present(table) {
      const rows = (await run(table, "control table check", controlsPresentSql, [])) as Record<
        string,
        unknown
      >[];
      return Number(Object.values(rows[0] ?? {})[0] ?? 0) !== 0;
    },
    async read(table) {
      try {
        const [rows] = (await pool.query(controlsReadSql, [table])) as [Record<string, unknown>[], unknown];
        return rows;
      } catch (error) {
        // ER_NO_SUCH_TABLE: not created yet.
        if ((error as { errno?: unknown }).errno === 1146) return undefined;
        throw normalizeError(error, { table, operation: "control table read", statement: controlsReadSql });
      }
    },
    async setPaused(table, scope, paused) {
      await run(table, "pause", controlsSetPausedSql, controlsSetPausedValues(table, scope, paused));
    },
    async takeRate(table, scope, take) {
      const header = (await run(
        table,
        "rate take",
        controlsTakeRateSql,
        controlsTakeRateValues(table, scope, take),
      )) as ResultHeaderLike;
      return Number(header.insertId);
    },
    async returnRate(table, scope, window, count) {
      await run(table, "rate give-back", controlsReturnRateSql, [count, table, scope, window]);
    },
    async create() {
      await run("rowclaim_controls", "CREATE TABLE", controlsSchemaSql, []);
    },
    schemaSql: `${controlsSchemaSql};`,
  };
}

/** The MySQL/MariaDB {@link ControlStore}: core's {@link ControlTable} over this dialect's statements. */
export class MysqlControlStore extends ControlTable {
  /** @param pool where statements run. */
  constructor(pool: QueryableLike) {
    super(mysqlControlStatements(pool));
  }
}
