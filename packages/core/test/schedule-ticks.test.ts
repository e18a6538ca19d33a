import { describe, expect, it } from "vitest";
import { BrokerError, parseTicks } from "../src/index.js";

const iso = (dates: readonly Date[]): string[] => dates.map((date) => date.toISOString());

describe("schedule ticks in Europe/Berlin across daylight-saving changes", () => {
  it("an hourly schedule fires once at every real hour across the spring-forward (23-hour day)", () => {
    const ticks = parseTicks("0 * * * *", "Europe/Berlin", "test");
    // 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00 UTC).
    const day = ticks.between(new Date("2026-03-28T23:00:00Z"), new Date("2026-03-29T22:00:00Z"));
    expect(day).toHaveLength(23);
    day.forEach((tick, index) => {
      expect(tick.getTime()).toBe(Date.parse("2026-03-29T00:00:00Z") + index * 3_600_000);
    });
  });

  it("an hourly schedule fires once at every real hour across the fall-back (25-hour day)", () => {
    const ticks = parseTicks("0 * * * *", "Europe/Berlin", "test");
    // 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00 UTC); local 02:00 happens twice.
    const day = ticks.between(new Date("2026-10-24T21:59:59Z"), new Date("2026-10-25T22:59:59Z"));
    expect(day).toHaveLength(25);
    day.forEach((tick, index) => {
      expect(tick.getTime()).toBe(Date.parse("2026-10-24T22:00:00Z") + index * 3_600_000);
    });
    expect(new Set(iso(day)).size).toBe(25);
  });

  it("a daily 02:30 fires once a day: after the gap on the spring-forward, once on the fall-back", () => {
    const ticks = parseTicks("30 2 * * *", "Europe/Berlin", "test");
    expect(iso(ticks.between(new Date("2026-03-27T12:00:00Z"), new Date("2026-03-30T12:00:00Z")))).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // 02:30 does not exist: 03:00 CEST, the first valid time after the gap
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
    ]);
    expect(iso(ticks.between(new Date("2026-10-24T12:00:00Z"), new Date("2026-10-26T12:00:00Z")))).toEqual([
      "2026-10-25T00:30:00.000Z", // the first 02:30 (CEST) only, not the second (CET)
      "2026-10-26T01:30:00.000Z", // 02:30 CET
    ]);
  });

  it("a daily 09:00 stays at 09:00 local time on both sides of each change", () => {
    const ticks = parseTicks("0 9 * * *", "Europe/Berlin", "test");
    expect(iso(ticks.between(new Date("2026-03-28T00:00:00Z"), new Date("2026-03-29T23:00:00Z")))).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
    ]);
    expect(iso(ticks.between(new Date("2026-10-24T00:00:00Z"), new Date("2026-10-25T23:00:00Z")))).toEqual([
      "2026-10-24T07:00:00.000Z",
      "2026-10-25T08:00:00.000Z",
    ]);
  });

  it("between() excludes its start, includes its end, and next() is strictly later", () => {
    const ticks = parseTicks("* * * * * *", "UTC", "test");
    const start = new Date("2026-01-01T00:00:00.000Z");
    expect(iso(ticks.between(start, new Date("2026-01-01T00:00:02.000Z")))).toEqual([
      "2026-01-01T00:00:01.000Z",
      "2026-01-01T00:00:02.000Z",
    ]);
    expect(ticks.next(start)?.toISOString()).toBe("2026-01-01T00:00:01.000Z");
    expect(ticks.between(start, new Date("2026-01-02T00:00:00Z"), 5)).toHaveLength(5);
  });
});

describe("schedule ticks refuse bad input with DECLARATION", () => {
  it.each([
    ["an out-of-range field", "61 * * * *", "UTC"],
    ["too few fields", "* *", "UTC"],
    ["text", "every day", "UTC"],
    ["an empty expression", "", "UTC"],
    ["an unknown time zone", "0 * * * *", "Mars/Olympus_Mons"],
  ])("%s", (_, cron, timezone) => {
    let caught: unknown;
    try {
      parseTicks(cron, timezone, "test");
    } catch (error) {
      caught = error;
    }
    expect(BrokerError.is(caught, "DECLARATION")).toBe(true);
  });
});
