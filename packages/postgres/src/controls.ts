/**
 * The PostgreSQL control store: core's `ControlTable` over `controls-sql.ts`, one statement a call;
 * with `notify: true` also a watch, one LISTEN connection per table shared by its watchers.
 *
 * @module
 */
import { type ControlStatements, ControlTable, type WakeListener } from "@rowclaim/core/driver";
import {
  controlsChannelFor,
  controlsPresentSql,
  controlsReadSql,
  controlsReturnRateSql,
  controlsSchemaSql,
  controlsSetPausedSql,
  controlsTakeRateSql,
} from "./controls-sql.js";
import { ChannelListener } from "./listen.js";
import { normalizeError, sqlStateOf } from "./normalize-error.js";
import type { PoolLike, QueryableLike } from "./pool-like.js";

/** SQLSTATEs of a `CREATE TABLE IF NOT EXISTS` that lost a race with another one: the table is there. */
const CREATED_MEANWHILE = new Set(["23505", "42P07"]);

/** The PostgreSQL control statements, each one query on `pool`. */
function postgresControlStatements(pool: QueryableLike): ControlStatements {
  const query = async (table: string, what: string, text: string, values: unknown[]) => {
    try {
      return await pool.query({ text, values });
    } catch (error) {
      throw normalizeError(error, { table, operation: `control table ${what}` });
    }
  };
  return {
    async present(table) {
      const result = await query(table, "control table check", controlsPresentSql, []);
      return result.rows[0]?.present === true;
    },
    async read(table) {
      try {
        return (await pool.query({ text: controlsReadSql, values: [table] })).rows;
      } catch (error) {
        if (sqlStateOf(error) === "42P01") return undefined;
        throw normalizeError(error, { table, operation: "control table read" });
      }
    },
    async setPaused(table, scope, paused) {
      await query(table, "pause", controlsSetPausedSql, [table, scope, paused, controlsChannelFor(table)]);
    },
    async takeRate(table, scope, take) {
      const result = await query(table, "rate take", controlsTakeRateSql, [
        table,
        scope,
        take.window,
        take.limit,
        take.want,
        take.intervalMs,
      ]);
      return Number(result.rows[0]?.rate_granted ?? 0);
    },
    async returnRate(table, scope, window, count) {
      await query(table, "rate give-back", controlsReturnRateSql, [table, scope, window, count]);
    },
    async create() {
      try {
        await pool.query({ text: controlsSchemaSql });
      } catch (error) {
        const state = sqlStateOf(error);
        if (state === undefined || !CREATED_MEANWHILE.has(state))
          throw normalizeError(error, {
            table: "rowclaim_controls",
            operation: "control table creation",
          });
      }
    },
    schemaSql: controlsSchemaSql,
  };
}

/** The PostgreSQL {@link ControlStore}: core's {@link ControlTable}, plus a watch where the driver listens. */
export class PostgresControlStore extends ControlTable {
  /** Listeners by table key, shared by the watches of one table. */
  readonly #listeners = new Map<string, { listener: Promise<ChannelListener>; watchers: Set<() => void> }>();

  /**
   * @param pool where statements run.
   * @param listenPool where a watch takes its LISTEN connection; absent: no watch (polling only).
   */
  constructor(pool: QueryableLike, listenPool: PoolLike | undefined) {
    super(postgresControlStatements(pool));
    if (listenPool !== undefined) this.watch = (table, onChange) => this.#watch(listenPool, table, onChange);
  }

  /** Set where the driver listens (`notify: true`). */
  readonly watch?: (table: string, onChange: () => void) => Promise<WakeListener>;

  async #watch(pool: PoolLike, table: string, onChange: () => void): Promise<WakeListener> {
    let entry = this.#listeners.get(table);
    if (entry === undefined) {
      const watchers = new Set<() => void>();
      const listener = ChannelListener.start(pool, controlsChannelFor(table), () => {
        for (const watcher of [...watchers]) watcher();
      });
      entry = { listener, watchers };
      this.#listeners.set(table, entry);
      listener.catch(() => {
        if (this.#listeners.get(table) === entry) this.#listeners.delete(table);
      });
    }
    const { listener, watchers } = entry;
    watchers.add(onChange);
    try {
      await listener;
    } catch (error) {
      watchers.delete(onChange);
      throw error;
    }
    return {
      close: async () => {
        watchers.delete(onChange);
        if (watchers.size > 0 || this.#listeners.get(table) !== entry) return;
        this.#listeners.delete(table);
        await (await listener).close();
      },
    };
  }
}
