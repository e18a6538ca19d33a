/**
 * The ticks of a schedule: which instants a cron expression names in a time zone, computed with
 * croner (daylight-saving transitions included: a time of day that a spring-forward skips fires
 * at the first valid time after the gap, a time that a fall-back repeats fires once; an hourly
 * or finer expression fires at every real instant it names, so it neither doubles nor loses an
 * hour). Pure: no clock, no database.
 *
 * @module
 */
import { Cron } from "croner";
import { DeclarationError } from "./errors.js";

/** The most ticks one call of {@link TickSeries.between} returns: a bound on what a backfill publishes at once. */
export const MAX_TICKS_AT_ONCE = 10_000;

/** A parsed cron expression in a time zone. */
export interface TickSeries {
  /** The expression as given. */
  readonly cron: string;
  /** The IANA time zone the expression is read in. */
  readonly timezone: string;
  /** The first tick strictly after `after`, or `null` when the expression names no later instant. */
  next(after: Date): Date | null;
  /**
   * The ticks strictly after `after` and at or before `upTo`, in order, at most `limit` of them
   * (default {@link MAX_TICKS_AT_ONCE}).
   */
  between(after: Date, upTo: Date, limit?: number): Date[];
}

/** Whether `timezone` is an IANA time zone this runtime knows. */
export function isKnownTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses `cron` (five fields, or six with seconds first; croner's syntax) read in `timezone`.
 *
 * @throws {DeclarationError} the expression is not valid cron, or the time zone is unknown.
 */
export function parseTicks(cron: string, timezone: string, context: string): TickSeries {
  if (typeof timezone !== "string" || !isKnownTimeZone(timezone)) {
    throw new DeclarationError(
      `${context}: timezone ${JSON.stringify(timezone)} is not an IANA time zone this runtime knows. Use a name such as "Europe/Berlin" or "UTC".`,
    );
  }
  if (typeof cron !== "string" || cron.trim() === "") {
    throw new DeclarationError(
      `${context}: the cron expression must be a non-empty string such as "0 * * * *".`,
    );
  }
  let parsed: Cron;
  try {
    parsed = new Cron(cron, { timezone, paused: true, mode: "5-or-6-parts" });
  } catch (error) {
    throw new DeclarationError(
      `${context}: ${JSON.stringify(cron)} is not a valid cron expression (${error instanceof Error ? error.message : String(error)}). Write five fields (minute hour day month weekday), or six with seconds first.`,
      { cause: error },
    );
  }
  if (parsed.nextRun(new Date()) === null) {
    throw new DeclarationError(`${context}: ${JSON.stringify(cron)} names no future instant.`);
  }
  return {
    cron,
    timezone,
    next: (after) => parsed.nextRun(after),
    between(after, upTo, limit = MAX_TICKS_AT_ONCE) {
      const ticks: Date[] = [];
      let tick = parsed.nextRun(after);
      while (tick !== null && tick.getTime() <= upTo.getTime() && ticks.length < limit) {
        ticks.push(tick);
        tick = parsed.nextRun(tick);
      }
      return ticks;
    },
  };
}
