/**
 * The schedules a config module declares, for `rowclaim schedules` to print their next ticks:
 * beside `tables`, the module may export `schedules`, one entry a schedule the service runs with
 * `broker.schedule` (its table's name, the schedule's name, cron and time zone).
 *
 * ```js
 * // rowclaim.config.mjs
 * export default {
 *   url: process.env.DATABASE_URL,
 *   tables: [jobs],
 *   schedules: [{ table: "jobs", name: "nightly-report", cron: "0 3 * * *", timezone: "Europe/Berlin" }],
 * };
 * ```
 *
 * @module
 */
import { pathToFileURL } from "node:url";
import { BrokerError, parseTicks, type TickSeries } from "@rowclaim/core";
import { ConfigError } from "./config.js";

/** One schedule as a config module declares it. */
export interface ScheduleDeclaration {
  /** The name of the table its rows go to (one of the config's tables). */
  readonly table: string;
  /** The schedule's name, as `broker.schedule` is given it. */
  readonly name: string;
  /** The cron expression. */
  readonly cron: string;
  /** The IANA time zone. Default `"UTC"`. */
  readonly timezone?: string;
}

/** A declared schedule with its ticks parsed. */
export interface DeclaredSchedule {
  readonly table: string;
  readonly name: string;
  readonly ticks: TickSeries;
}

/**
 * Reads the `schedules` export of config module `file` (default export or by name); an empty
 * list when it exports none.
 *
 * @throws {ConfigError} an entry is not a schedule, or its cron or time zone is invalid.
 */
export async function loadScheduleDeclarations(file: string): Promise<readonly DeclaredSchedule[]> {
  const loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const source = typeof loaded.default === "object" && loaded.default !== null ? loaded.default : loaded;
  const given = (source as { schedules?: unknown }).schedules;
  if (given === undefined) return [];
  if (!Array.isArray(given))
    throw new ConfigError(`${file}: schedules must be an array of { table, name, cron, timezone }.`);
  return given.map((entry: unknown, index: number) => {
    const { table, name, cron, timezone } = (entry ?? {}) as Partial<
      Record<keyof ScheduleDeclaration, unknown>
    >;
    if (typeof table !== "string" || typeof name !== "string" || typeof cron !== "string")
      throw new ConfigError(`${file}: schedules[${index}] needs { table, name, cron } as strings.`);
    if (timezone !== undefined && typeof timezone !== "string")
      throw new ConfigError(`${file}: schedules[${index}].timezone must be a string.`);
    try {
      return { table, name, ticks: parseTicks(cron, timezone ?? "UTC", `${file}: schedules[${index}]`) };
    } catch (error) {
      if (BrokerError.is(error, "DECLARATION")) throw new ConfigError(error.message, { cause: error });
      throw error;
    }
  });
}
