/**
 * The SQLite driver's control store (core's `ControlStore`): pauses and rate counters in
 * `rowclaim_controls`, each call one statement on the driver's connection. No watch:
 * subscriptions read the pauses every poll interval.
 *
 * @module
 */
import { type ControlRow, type ControlStore, controlRowOf, type RateTake } from "@rowclaim/core/driver";
import { type BusyRetryPolicy, retryBusyAs } from "./busy-retry.js";
import {
  controlsPresentSql,
  controlsReadSql,
  controlsReturnRateSql,
  controlsSchemaSql,
  controlsSetPausedSql,
  controlsTakeRateSql,
} from "./controls-sql.js";
import type { SqliteDatabase, SqliteStatement } from "./database.js";

/** The control table's prepared statements. */
interface ControlStatements {
  readonly read: SqliteStatement;
  readonly setPaused: SqliteStatement;
  readonly take: SqliteStatement;
  readonly giveBack: SqliteStatement;
}

/** The SQLite {@link ControlStore}. */
export class SqliteControlStore implements ControlStore {
  readonly #db: SqliteDatabase;
  readonly #busy: BusyRetryPolicy;
  /** The prepared statements, once the control table exists (preparing needs it). */
  #statements: ControlStatements | undefined;

  constructor(db: SqliteDatabase, busy: BusyRetryPolicy) {
    this.#db = db;
    this.#busy = busy;
  }

  #run<T>(table: string, what: string, work: () => T): Promise<T> {
    return retryBusyAs(this.#db, this.#busy, { table, operation: `control table ${what}` }, work);
  }

  /** The statements, prepared where the control table exists; `undefined` where it does not. */
  #prepared(): ControlStatements | undefined {
    if (this.#statements !== undefined) return this.#statements;
    if (this.#db.prepare(controlsPresentSql).get() === undefined) return undefined;
    this.#statements = {
      read: this.#db.prepare(controlsReadSql),
      setPaused: this.#db.prepare(controlsSetPausedSql),
      take: this.#db.prepare(controlsTakeRateSql),
      giveBack: this.#db.prepare(controlsReturnRateSql),
    };
    return this.#statements;
  }

  #ready(): ControlStatements {
    const statements = this.#prepared();
    if (statements !== undefined) return statements;
    this.#db.exec(controlsSchemaSql);
    return this.#prepared() as ControlStatements;
  }

  async setPaused(table: string, scope: string, paused: boolean): Promise<void> {
    await this.#run(table, "pause", () =>
      this.#ready().setPaused.run({ table, scope, paused: paused ? 1 : 0, now: Date.now() }),
    );
  }

  async read(table: string): Promise<readonly ControlRow[]> {
    const rows = await this.#run(table, "read", () => this.#prepared()?.read.all({ table }) ?? []);
    return (rows as Record<string, unknown>[]).map(controlRowOf);
  }

  async takeRate(table: string, scope: string, take: RateTake): Promise<number> {
    const { window, want, limit, intervalMs: interval } = take;
    const row = await this.#run(table, "rate take", () =>
      this.#ready().take.get({ table, scope, window, want, limit, interval }),
    );
    return Number((row as { rate_granted?: unknown } | undefined)?.rate_granted ?? 0);
  }

  async returnRate(table: string, scope: string, window: number, count: number): Promise<void> {
    await this.#run(table, "rate give-back", () =>
      this.#ready().giveBack.run({ table, scope, window, count }),
    );
  }

  async ensure(): Promise<void> {
    await this.#run("rowclaim_controls", "CREATE TABLE", () => this.#ready());
  }

  schemaSql(): string {
    return `${controlsSchemaSql};`;
  }
}
