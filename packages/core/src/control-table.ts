/**
 * A {@link ControlStore} over a driver's control statements, for a database where a statement
 * runs without preparing first: core keeps whether the control table was seen (then reads go
 * straight to it, and a table dropped meanwhile reads as "nothing paused" and is looked for
 * again), creates it before the first pause, and decodes its rows; the driver runs one
 * statement a method.
 *
 * @module
 */
import { type ControlRow, type ControlStore, controlRowOf, type RateTake } from "./control-store.js";

/** One dialect's control statements, each run on a connection of the driver's pool. */
export interface ControlStatements {
  /** Whether the control table exists. */
  present(table: string): Promise<boolean>;
  /** The raw control rows of `table`, or `undefined` where the control table does not exist (any other error thrown). */
  read(table: string): Promise<readonly Readonly<Record<string, unknown>>[] | undefined>;
  /** Writes whether one scope is paused (the control table exists). */
  setPaused(table: string, scope: string, paused: boolean): Promise<void>;
  /** See {@link ControlStore.takeRate}. */
  takeRate(table: string, scope: string, take: RateTake): Promise<number>;
  /** See {@link ControlStore.returnRate}. */
  returnRate(table: string, scope: string, window: number, count: number): Promise<void>;
  /** `CREATE TABLE IF NOT EXISTS`; a race lost to another creator is no error. */
  create(): Promise<void>;
  /** The control table's `CREATE TABLE` statement, as {@link ControlStore.schemaSql} returns it. */
  readonly schemaSql: string;
}

/** The {@link ControlStore} of a driver whose control table is run by {@link ControlStatements}. */
export class ControlTable implements ControlStore {
  readonly #statements: ControlStatements;
  /** Whether the control table was seen to exist. */
  #present = false;

  /** @param statements the dialect's control statements. */
  constructor(statements: ControlStatements) {
    this.#statements = statements;
  }

  async setPaused(table: string, scope: string, paused: boolean): Promise<void> {
    await this.ensure();
    await this.#statements.setPaused(table, scope, paused);
  }

  async read(table: string): Promise<readonly ControlRow[]> {
    if (!this.#present) {
      if (!(await this.#statements.present(table))) return [];
      this.#present = true;
    }
    const rows = await this.#statements.read(table);
    if (rows === undefined) {
      // Dropped since it was seen: nothing is paused.
      this.#present = false;
      return [];
    }
    return rows.map(controlRowOf);
  }

  takeRate(table: string, scope: string, take: RateTake): Promise<number> {
    return this.#statements.takeRate(table, scope, take);
  }

  returnRate(table: string, scope: string, window: number, count: number): Promise<void> {
    return this.#statements.returnRate(table, scope, window, count);
  }

  async ensure(): Promise<void> {
    if (this.#present) return;
    await this.#statements.create();
    this.#present = true;
  }

  schemaSql(): string {
    return this.#statements.schemaSql;
  }
}
