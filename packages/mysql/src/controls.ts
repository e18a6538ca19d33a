/**
 * The MySQL/MariaDB driver's control store (`ControlStore` of `@rowclaim/core`): pauses and
 * rate counters in `rowclaim_controls` (`src/controls-sql.ts`). Each call is one statement on
 * a connection of the pool, returned at once; a rate take that meets a deadlock (a Galera
 * certification conflict between nodes) runs again. No watch: subscriptions read the pauses
 * every poll interval.
 *
 * @module
 */
import { type ControlRow, type ControlStore, controlRowOf, type RateTake } from "@rowclaim/core/driver";
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

/** The MySQL/MariaDB {@link ControlStore}. */
export class MysqlControlStore implements ControlStore {
  readonly #pool: QueryableLike;
  /** Whether the control table was seen to exist (then reads go straight to it). */
  #present = false;

  constructor(pool: QueryableLike) {
    this.#pool = pool;
  }

  async #run(table: string, what: string, sql: string, values: unknown[]): Promise<unknown> {
    try {
      const [result] = await withDeadlockRetry(() => this.#pool.query(sql, values));
      return result;
    } catch (error) {
      throw normalizeError(error, { table, operation: `control table ${what}`, statement: sql });
    }
  }

  async setPaused(table: string, scope: string, paused: boolean): Promise<void> {
    await this.ensure();
    await this.#run(table, "pause", controlsSetPausedSql, controlsSetPausedValues(table, scope, paused));
  }

  async read(table: string): Promise<readonly ControlRow[]> {
    if (!this.#present) {
      const rows = (await this.#run(table, "control table check", controlsPresentSql, [])) as Record<
        string,
        unknown
      >[];
      if (Number(Object.values(rows[0] ?? {})[0] ?? 0) === 0) return [];
      this.#present = true;
    }
    let rows: Record<string, unknown>[];
    try {
      [rows] = (await this.#pool.query(controlsReadSql, [table])) as [Record<string, unknown>[], unknown];
    } catch (error) {
      if ((error as { errno?: unknown }).errno === NO_SUCH_TABLE) {
        this.#present = false;
        return [];
      }
      throw normalizeError(error, { table, operation: "control table read", statement: controlsReadSql });
    }
    return rows.map(controlRowOf);
  }

  async takeRate(table: string, scope: string, take: RateTake): Promise<number> {
    const header = (await this.#run(
      table,
      "rate take",
      controlsTakeRateSql,
      controlsTakeRateValues(table, scope, take),
    )) as ResultHeaderLike;
    return Number(header.insertId);
  }

  async returnRate(table: string, scope: string, window: number, count: number): Promise<void> {
    await this.#run(table, "rate give-back", controlsReturnRateSql, [count, table, scope, window]);
  }

  async ensure(): Promise<void> {
    if (this.#present) return;
    await this.#run("rowclaim_controls", "CREATE TABLE", controlsSchemaSql, []);
    this.#present = true;
  }

  schemaSql(): string {
    return `${controlsSchemaSql};`;
  }
}
