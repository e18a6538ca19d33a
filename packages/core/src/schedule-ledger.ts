/**
 * The schedule ledger: the optional driver capability behind `broker.schedule`. A ledger table
 * (`rowclaim_schedule_ticks`, one per schema or database, beside the queue tables) records each
 * tick a schedule published under the primary key (table, schedule, tick). Publishing a tick
 * inserts its ledger row with the dialect's insert-or-ignore and, in the same transaction and
 * only when that insert won, the tick's queue row: however many processes run a schedule, the
 * database lets exactly one of them publish each tick. Core computes the ticks and runs the
 * loop; the driver runs the SQL.
 *
 * A driver that offers it sets `capabilities.schedules` and gives {@link ScheduleLedger} as
 * `Driver.scheduleLedger`.
 *
 * @module
 */
import { SchemaError } from "./errors.js";
import type { PublishRow, RowId } from "./rows.js";
import type { TableDefinition } from "./table.js";

/** The ledger table's name, in the schema (PostgreSQL), database (MySQL) or file (SQLite) of the queue table. */
export const SCHEDULE_LEDGER_TABLE = "rowclaim_schedule_ticks";

/** What the ledger knows of one schedule of one table. */
export interface LedgerSchedule {
  /** The schedule's name. */
  readonly name: string;
  /** The latest tick published. */
  readonly lastTick: Date;
  /** How many ticks the ledger still keeps (older ones are pruned). */
  readonly ticks: number;
}

/**
 * The SQL side of schedules (see the module). Every method is scoped to one queue table: the
 * ledger lives where `table` lives (`table.schema`, or the connection's default), and its
 * `table_name` column holds `table.name`.
 */
export interface ScheduleLedger {
  /**
   * Checks that the ledger table exists where `table` lives.
   *
   * @throws {SchemaError} it does not: the message names the ledger table and the statement that creates it.
   */
  check(table: TableDefinition): Promise<void>;
  /** The latest tick recorded for schedule `name` of `table`, or `null` when none is. */
  lastTick(table: TableDefinition, name: string): Promise<Date | null>;
  /**
   * In one transaction: records tick `tick` of schedule `name` with insert-or-ignore and, only
   * when this insert recorded it, inserts `row` into `table`. Returns the new row's id, or
   * `null` when the tick was already recorded (another process published it) and nothing was
   * inserted. A transaction the database aborts for a conflict with a concurrent one (a
   * deadlock, a Galera certification failure) is tried again: the retry finds the tick recorded.
   */
  publishTick(table: TableDefinition, name: string, tick: Date, row: PublishRow): Promise<RowId | null>;
  /** Deletes the ticks of schedule `name` of `table` before `before`, always keeping the latest one. */
  prune(table: TableDefinition, name: string, before: Date): Promise<void>;
  /** Every schedule the ledger knows for `table`, by name. */
  list(table: TableDefinition): Promise<readonly LedgerSchedule[]>;
  /**
   * The `CREATE TABLE IF NOT EXISTS` text of the ledger table in `schema` (the connection's
   * default when `undefined`), as SQL text.
   */
  schemaSql(schema: string | undefined): string;
}

/**
 * The `SchemaError` of a ledger `check` that found no ledger where `table` lives: names the
 * ledger, the schema or database (`where`), the table and the statement that creates it.
 */
export function missingLedgerError(
  table: TableDefinition,
  createSql: string,
  where: "schema" | "database",
): SchemaError {
  return new SchemaError(
    `The schedule ledger table "${SCHEDULE_LEDGER_TABLE}" does not exist${table.schema === undefined ? "" : ` in ${where} "${table.schema}"`}, which schedules of table "${table.name}" need. Create it: ${createSql.trim()} (also printed by \`rowclaim schema --schedules\`).`,
    { table: table.name, statement: "checking the schedule ledger" },
  );
}

/** A tick the ledger stored (epoch milliseconds, as a number, a bigint or numeric text) as a `Date`; `null` for none. */
export function ledgerTick(value: unknown): Date | null {
  return value === null || value === undefined ? null : new Date(Number(value));
}

/**
 * What a ledger builds once per schema (or database) it serves, never per tick: returns the
 * getter by table, building with `build(schema)` the first time a schema is asked for.
 */
export function perLedgerSchema<T>(build: (schema: string | undefined) => T): (table: TableDefinition) => T {
  const built = new Map<string | undefined, T>();
  return (table) => {
    let value = built.get(table.schema);
    if (value === undefined) {
      value = build(table.schema);
      built.set(table.schema, value);
    }
    return value;
  };
}

/**
 * The statements of one ledger, as each dialect's schedule SQL module builds them for a schema
 * (parameters: the table name, the schedule name, a tick in epoch milliseconds, bound as the
 * dialect binds them).
 */
export interface ScheduleLedgerStatements {
  /** Tells whether the ledger exists (one row, `present`). */
  readonly exists: string;
  /** Records a tick with insert-or-ignore; affects one row when it was not recorded yet. */
  readonly recordTick: string;
  /** One row: `tick_ms`, the schedule's latest tick (NULL when none). */
  readonly lastTick: string;
  /** Deletes the schedule's ticks before the given one, keeping its latest. */
  readonly prune: string;
  /** `schedule_name`, `last_tick_ms`, `ticks` of every schedule of the table. */
  readonly list: string;
}

/** The schedules of a ledger's `list` statement's rows (`schedule_name`, `last_tick_ms`, `ticks`). */
export function ledgerSchedulesOf(rows: readonly Readonly<Record<string, unknown>>[]): LedgerSchedule[] {
  return rows.map((found) => ({
    name: String(found.schedule_name),
    lastTick: ledgerTick(found.last_tick_ms) as Date,
    ticks: Number(found.ticks),
  }));
}
