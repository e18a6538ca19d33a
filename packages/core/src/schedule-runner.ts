/**
 * The loop that runs one schedule in one broker: at start it publishes the ticks missed within
 * the backfill window (since the ledger's last tick), then sleeps until the next tick, publishes
 * it through the driver's {@link ScheduleLedger} (which lets one process of all that run the
 * schedule insert each tick) and sleeps again. The loop reads the broker's clock at least once a
 * second, so a clock that jumps (or a test's controllable clock) is followed.
 *
 * A tick that fails to publish (the database does not answer) is tried again a second later,
 * while it is within `backfill`, or one minute, of now, whichever is longer; an older one is
 * skipped with a warning. Old ledger entries are pruned once a minute.
 *
 * @module
 */
import type { Logger } from "./logger.js";
import type { PublishRow } from "./rows.js";
import type { ScheduleLedger } from "./schedule-ledger.js";
import type { TickSeries } from "./schedule-ticks.js";
import type { TableDefinition } from "./table.js";

/** The longest the loop sleeps before it reads the clock again, in milliseconds. */
export const MAX_SCHEDULE_SLEEP_MS = 1000;

/** How late, at least, a running broker still publishes a tick it could not publish on time, in milliseconds. */
export const LATE_TICK_MS = 60_000;

/**
 * How much longer than the window any process still publishes in the ledger keeps a tick, in
 * milliseconds: the clocks of the hosts running one schedule may differ by up to this much.
 */
export const LEDGER_MARGIN_MS = 10 * 60_000;

/** How often a running schedule prunes its old ledger entries, in milliseconds. */
const PRUNE_EVERY_MS = 60_000;

/** A schedule running in a broker, as `broker.schedule` returns it. */
export interface Schedule {
  /** The schedule's name (unique in its broker). */
  readonly name: string;
  /** The table its rows go to. */
  readonly table: TableDefinition;
  /** The cron expression. */
  readonly cron: string;
  /** The time zone it is read in. */
  readonly timezone: string;
  /** The next tick after the last one this broker handled (published, or found published), or `null` if none. */
  nextTick(): Date | null;
  /** Stops this broker running the schedule (other processes running it go on). Resolves once no tick is being published. */
  stop(): Promise<void>;
}

/** What a {@link ScheduleRunner} runs on. */
export interface ScheduleRunnerOptions {
  readonly table: TableDefinition;
  readonly name: string;
  readonly ticks: TickSeries;
  readonly backfillMs: number;
  readonly ledger: ScheduleLedger;
  readonly clock: () => Date;
  readonly logger: Logger;
  /** The row of one tick, encoded for the table (its payload checked). */
  readonly encode: (tick: Date) => Promise<PublishRow>;
  /** Called after this broker published a tick's row. */
  readonly onPublished: () => void;
  /** Called once the runner stopped. */
  readonly onStopped: () => void;
}

/** Runs one schedule: see the module. */
export class ScheduleRunner implements Schedule {
  readonly name: string;
  readonly table: TableDefinition;
  readonly cron: string;
  readonly timezone: string;
  readonly #options: ScheduleRunnerOptions;
  /** The last tick handled: every tick after it is still to publish. */
  #cursor = new Date(0);
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #lastPrune = 0;

  constructor(options: ScheduleRunnerOptions) {
    this.#options = options;
    this.name = options.name;
    this.table = options.table;
    this.cron = options.ticks.cron;
    this.timezone = options.ticks.timezone;
  }

  /** Reads the ledger's last tick and starts the loop, whose first turn publishes the backfill. */
  async start(): Promise<void> {
    const { ledger, table, name, clock, backfillMs } = this.#options;
    const last = await ledger.lastTick(table, name);
    const now = clock().getTime();
    // A schedule the ledger has never seen starts with its next tick; one it has seen publishes
    // what it missed since, within the backfill window.
    this.#cursor = new Date(last === null ? now : Math.max(last.getTime(), now - backfillMs));
    this.#arm(0);
  }

  nextTick(): Date | null {
    return this.#options.ticks.next(this.#cursor);
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      await this.#running;
      this.#options.onStopped();
    })();
    return this.#stopping;
  }

  #arm(delayMs: number): void {
    if (this.#stopping !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#turn().finally(() => {
        this.#running = undefined;
      });
    }, delayMs);
  }

  /** Publishes every tick due, then sleeps until the next one (a second at most). */
  async #turn(): Promise<void> {
    const { ticks, clock, backfillMs, logger, table, name } = this.#options;
    const now = clock();
    const floor = now.getTime() - Math.max(backfillMs, LATE_TICK_MS);
    if (this.#cursor.getTime() < floor) {
      const skipped = ticks.between(this.#cursor, new Date(floor)).length;
      if (skipped > 0)
        logger.warn(
          `Schedule "${name}" of table "${table.name}" skipped ${skipped} tick(s) it could not publish within ${Math.max(backfillMs, LATE_TICK_MS)} ms of their time.`,
        );
      this.#cursor = new Date(floor);
    }
    let failed = false;
    for (const tick of ticks.between(this.#cursor, now)) {
      if (this.#stopping !== undefined) return;
      if (!(await this.#publish(tick))) {
        failed = true;
        break;
      }
      this.#cursor = tick;
    }
    if (!failed) await this.#prune(now);
    const next = ticks.next(this.#cursor);
    const wait = failed || next === null ? MAX_SCHEDULE_SLEEP_MS : next.getTime() - clock().getTime();
    this.#arm(Math.max(0, Math.min(wait, MAX_SCHEDULE_SLEEP_MS)));
  }

  /** Publishes one tick; `false` when it failed for a reason worth trying again. */
  async #publish(tick: Date): Promise<boolean> {
    const { ledger, table, name, logger, encode, onPublished } = this.#options;
    let row: PublishRow;
    try {
      row = await encode(tick);
    } catch (error) {
      logger.error(
        `Schedule "${name}" of table "${table.name}": the payload of tick ${tick.toISOString()} could not be made; the tick is skipped.`,
        { err: error },
      );
      return true;
    }
    try {
      const id = await ledger.publishTick(table, name, tick, row);
      if (id !== null) onPublished();
      return true;
    } catch (error) {
      logger.error(
        `Schedule "${name}" of table "${table.name}": publishing tick ${tick.toISOString()} failed; it is tried again in ${MAX_SCHEDULE_SLEEP_MS} ms.`,
        { err: error },
      );
      return false;
    }
  }

  async #prune(now: Date): Promise<void> {
    if (now.getTime() - this.#lastPrune < PRUNE_EVERY_MS) return;
    this.#lastPrune = now.getTime();
    const { ledger, table, name, backfillMs, logger } = this.#options;
    const before = new Date(now.getTime() - Math.max(backfillMs, LATE_TICK_MS) - LEDGER_MARGIN_MS);
    try {
      await ledger.prune(table, name, before);
    } catch (error) {
      logger.warn(`Schedule "${name}" of table "${table.name}": pruning old ledger entries failed.`, {
        err: error,
      });
    }
  }
}
