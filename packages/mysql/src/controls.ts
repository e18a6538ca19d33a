/**
 * The MySQL/MariaDB driver's control store (`ControlStore` of `@rowclaim/core`): pauses and
 * rate counters in `rowclaim_controls` (`src/controls-sql.ts`). Each call is one statement on
 * a connection of the pool, returned at once; a rate take that meets a deadlock (a Galera
 * certification conflict between nodes) runs again. No watch: subscriptions read the pauses
 * every poll interval.
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

/** MySQL's "table doesn't exist". */
const NO_SUCH_TABLE = 1146;

/** The MySQL/MariaDB control statements, each one query on `pool`, run again after a deadlock. */
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
        if ((error as { errno?: unknown }).errno === NO_SUCH_TABLE) return undefined;
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
