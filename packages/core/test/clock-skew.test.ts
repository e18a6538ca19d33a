import { describe, expect, it } from "vitest";
import { BrokerError, ClockSkewMonitor, clockSkewDefaults, defineTable, silentLogger } from "../src/index.js";

const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
  lease: 20,
});

function monitor(options: Record<string, number>) {
  return () =>
    new ClockSkewMonitor({
      table,
      databaseTime: () => Promise.reject(new Error("not read when the options are refused")),
      clock: () => new Date(),
      logger: silentLogger,
      options,
    });
}

describe("clock-skew options that cannot work are refused", () => {
  it.each([
    [{ warnFraction: 0 }],
    [{ refuseFraction: -1 }],
    [{ intervalMs: Number.NaN }],
    [{ warnFraction: 0.5, refuseFraction: 0.2 }],
  ])("%o fails with DECLARATION", (options) => {
    let thrown: unknown;
    try {
      monitor(options)();
    } catch (error) {
      thrown = error;
    }
    expect(BrokerError.is(thrown, "DECLARATION")).toBe(true);
  });

  it("the defaults warn at a tenth of the lease and refuse at a quarter, measuring every minute", () => {
    expect(clockSkewDefaults).toEqual({ warnFraction: 0.1, refuseFraction: 0.25, intervalMs: 60_000 });
    expect(monitor({})).not.toThrow();
  });
});
