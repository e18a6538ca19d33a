/**
 * The options of `broker.schedule`, and their check: an unknown key, a time zone the runtime
 * does not know, a negative or non-numeric backfill is refused with a `DeclarationError` (code
 * `DECLARATION`) before anything is written.
 *
 * @module
 */
import type { ValuesFor } from "./broker-options.js";
import { DeclarationError } from "./errors.js";
import { describeValue, unknownKey } from "./option-keys.js";
import type { Headers } from "./rows.js";
import { parseTicks, type TickSeries } from "./schedule-ticks.js";
import type { ExtraColumnsOf, HeadersOf, PublishPayloadOf, TableDefinition } from "./table.js";

/**
 * The options of `broker.schedule`.
 *
 * @typeParam Head the table's headers type.
 * @typeParam Extra the table's extra column names.
 */
export interface ScheduleOptions<Head = Headers, Extra extends string = string> {
  /** The IANA time zone the cron expression is read in (`"Europe/Berlin"`). Default `"UTC"`. */
  readonly timezone?: string;
  /**
   * How far back, in milliseconds, ticks missed while no process ran the schedule are published
   * at start (each once, the oldest first). Default 0: a start publishes no missed tick.
   */
  readonly backfill?: number;
  /** The group of every row the schedule publishes. Needs a group column. */
  readonly group?: string | null;
  /** The priority of every row. Needs a priority column. */
  readonly priority?: number;
  /** Headers of every row. Needs a headers column. */
  readonly headers?: Head;
  /** Values for the table's extra columns. */
  readonly values?: ValuesFor<Extra>;
}

/** The options of `broker.schedule` for one table, typed by the table. */
export type ScheduleOptionsFor<Table> = ScheduleOptions<HeadersOf<Table>, ExtraColumnsOf<Table>>;

/**
 * What a schedule publishes at each tick: a payload, or a function of the tick's instant that
 * returns one (called once per tick, by the process that publishes it).
 */
export type ScheduledPayload<Table> = PublishPayloadOf<Table> | ((tick: Date) => PublishPayloadOf<Table>);

/** The keys `broker.schedule` takes. */
export const scheduleOptionKeys: readonly string[] = Object.freeze(
  Object.keys({
    timezone: true,
    backfill: true,
    group: true,
    priority: true,
    headers: true,
    values: true,
  } satisfies { readonly [K in keyof Required<ScheduleOptions>]: true }),
);

/** A schedule's checked settings. */
export interface ScheduleSettings {
  /** The schedule's name. */
  readonly name: string;
  /** The ticks. */
  readonly ticks: TickSeries;
  /** The backfill window in milliseconds. */
  readonly backfillMs: number;
  /** The publish options every row gets (`group`, `priority`, `headers`, `values`, as given). */
  readonly message: Pick<ScheduleOptions, "group" | "priority" | "headers" | "values">;
}

/** The longest schedule name: it is a key column of the ledger. */
export const MAX_SCHEDULE_NAME_LENGTH = 200;

/**
 * Checks the arguments of `broker.schedule(table, name, cron, payload, options)`.
 *
 * @throws {DeclarationError} naming what is wrong and how to fix it.
 */
export function checkSchedule(
  table: TableDefinition,
  name: unknown,
  cron: unknown,
  options: unknown,
): ScheduleSettings {
  const context = `schedule(${table.name}, ${JSON.stringify(name) ?? String(name)})`;
  const fail = (problem: string): never => {
    throw new DeclarationError(`${context}: ${problem}`, { table: table.name });
  };
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_SCHEDULE_NAME_LENGTH)
    fail(
      `the name must be a non-empty string of at most ${MAX_SCHEDULE_NAME_LENGTH} characters, not ${describeValue(name)}.`,
    );
  if (typeof options !== "object" || options === null)
    fail(
      `the options must be an object, not ${describeValue(options)}. Pass { timezone, backfill, … } or nothing.`,
    );
  const given = options as ScheduleOptions;
  const unknown = unknownKey(given, scheduleOptionKeys);
  if (unknown !== undefined) fail(`unknown option \`${unknown.key}\`. ${unknown.advice}`);
  const backfillMs = given.backfill ?? 0;
  if (typeof backfillMs !== "number" || !Number.isFinite(backfillMs) || backfillMs < 0)
    fail(`backfill must be a number of milliseconds of at least 0, got ${describeValue(given.backfill)}.`);
  const timezone = given.timezone ?? "UTC";
  let ticks: TickSeries;
  try {
    ticks = parseTicks(cron as string, timezone, context);
  } catch (error) {
    if (error instanceof DeclarationError)
      throw new DeclarationError(error.message, { table: table.name, cause: error.cause });
    throw error;
  }
  const { group, priority, headers, values } = given;
  return {
    name: name as string,
    ticks,
    backfillMs,
    message: {
      ...(group === undefined ? {} : { group }),
      ...(priority === undefined ? {} : { priority }),
      ...(headers === undefined ? {} : { headers }),
      ...(values === undefined ? {} : { values }),
    },
  };
}
