import { describe, expect, it } from "vitest";
import { ClockSkewMonitor, clockSkewDefaults } from "../src/clock-skew.js";
import { BrokerError, defineTable, silentLogger } from "../src/index.js";

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

describe("a running subscription that stops claiming on clock skew logs the error", () => {
  it("the error log carries err, a ClockSkewError, and the code CLOCK_SKEW", async () => {
    const offset = { ms: 0 };
    const logged: { message: string; details: Readonly<Record<string, unknown>> | undefined }[] = [];
    const skew = new ClockSkewMonitor({
      table,
      databaseTime: async () => new Date(),
      clock: () => new Date(Date.now() + offset.ms),
      logger: { warn() {}, error: (message, details) => logged.push({ message, details }) },
      options: { intervalMs: 1 },
    });
    await skew.assertAtSubscribe();
    offset.ms = 15_000;
    // Measured again once the 1 ms interval has passed: poll until the verdict turns.
    const deadline = Date.now() + 5_000;
    while ((await skew.mayClaim()) && Date.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(logged).toHaveLength(1);
    const details = logged[0]?.details ?? {};
    expect(BrokerError.is(details.err, "CLOCK_SKEW")).toBe(true);
    expect(details.code).toBe("CLOCK_SKEW");
  });
});
