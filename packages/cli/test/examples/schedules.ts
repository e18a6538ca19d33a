// The core README's "Schedules" example, run by test/schedules.test.ts.
import { type Broker, defineTable, type Schedule } from "@rowclaim/core";

/** Runs the README's nightly report schedule on `broker`, publishing to table `name`. */
export async function scheduleExample(broker: Broker, name: string): Promise<Schedule> {
  // #region schedule
  const reports = defineTable({
    name,
    columns: { id: "id", payload: "payload", runAt: "run_at", lockedUntil: "locked_until" },
  });
  const nightly = await broker.schedule(
    reports,
    "nightly-report",
    "0 3 * * *", // 03:00 in Berlin, summer and winter
    (tick) => ({ day: tick.toISOString().slice(0, 10) }),
    { timezone: "Europe/Berlin", backfill: 6 * 60 * 60 * 1000 }, // missed ticks of the last 6 h, once
  );
  // #endregion schedule
  return nightly;
}
