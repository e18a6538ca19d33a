/**
 * What the schedules sub-suite shares with its child runner (`schedule-child.ts`), and the
 * helpers its tests read schedules' rows with.
 *
 * @module
 */
import type { Driver, TableDefinition, TableDescription } from "@rowclaim/core";
import type { ConformanceHarness } from "./harness.js";
import { columnNames } from "./tables.js";

/** A clock that runs `speed` times faster than the machine's, from `startMs` at machine time `realStartMs`. */
export interface FastClock {
  readonly startMs: number;
  readonly realStartMs: number;
  readonly speed: number;
}

/** The reading of a {@link FastClock} now. */
export function readFastClock(clock: FastClock): Date {
  return new Date(clock.startMs + (Date.now() - clock.realStartMs) * clock.speed);
}

/** What a schedule child runs. */
export interface ScheduleChildConfig {
  /** The harness's `childDriverModule`. */
  readonly driverModule: string;
  /** The table's description. */
  readonly table: TableDescription;
  readonly name: string;
  readonly cron: string;
  readonly backfill: number;
  readonly clock: FastClock;
}

/** The tick each row of `table` was published for (its payload `{ tick }`), as epoch milliseconds, in id order. */
export async function publishedTicks(harness: ConformanceHarness, table: TableDefinition): Promise<number[]> {
  const rows = await harness.readRows(table);
  return rows.map((row) => {
    let payload: unknown = row[columnNames.payload];
    if (payload instanceof Uint8Array) payload = Buffer.from(payload).toString("utf8");
    if (typeof payload === "string") payload = JSON.parse(payload);
    const tick = (payload as { tick?: unknown } | null)?.tick;
    if (typeof tick !== "string")
      throw new Error(`A row of ${table.name} carries no tick: ${JSON.stringify(row)}.`);
    return Date.parse(tick);
  });
}

/**
 * Creates the schedule ledger where `table` lives with `driver`'s `scheduleLedger.schemaSql`,
 * unless it is there (the ledger is shared by every table of a schema and never dropped; two
 * test files creating it at once may race, so a failed create is checked once more).
 */
export async function ensureLedger(
  harness: ConformanceHarness,
  driver: Driver,
  table: TableDefinition,
): Promise<void> {
  const ledger = driver.scheduleLedger;
  if (ledger === undefined) throw new Error(`The ${driver.name} driver keeps no schedule ledger.`);
  try {
    await harness.execute(ledger.schemaSql(table.schema));
  } catch (error) {
    try {
      await ledger.check(table);
    } catch {
      throw error;
    }
  }
}
