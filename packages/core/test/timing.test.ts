import { describe, expect, it } from "vitest";
import { backoffDelay } from "../src/backoff.js";
import { ceilToSecond, leaseExpiry } from "../src/driver-api.js";

describe("lease expiries are whole seconds of the host clock", () => {
  it("rounds up to the next whole second", () => {
    expect(ceilToSecond(Date.UTC(2026, 0, 1, 0, 0, 0, 1)).getTime()).toBe(Date.UTC(2026, 0, 1, 0, 0, 1));
  });
  it("keeps a time already on a whole second", () => {
    expect(ceilToSecond(Date.UTC(2026, 0, 1, 0, 0, 5)).getTime()).toBe(Date.UTC(2026, 0, 1, 0, 0, 5));
  });
  it("an expiry is now plus the lease, rounded up", () => {
    const now = new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 400));
    expect(leaseExpiry(now, 30).getTime()).toBe(Date.UTC(2026, 0, 1, 0, 0, 31));
    expect(leaseExpiry(now, 30).getMilliseconds()).toBe(0);
  });
});

describe("a handler that throws is retried with capped exponential backoff", () => {
  it("doubles from the base", () => {
    expect([1, 2, 3, 4].map((attempt) => backoffDelay(attempt, { baseMs: 100 }))).toEqual([
      100, 200, 400, 800,
    ]);
  });
  it("stops at the cap", () => {
    expect(backoffDelay(40, { baseMs: 1000, maxMs: 60_000 })).toBe(60_000);
    expect(backoffDelay(10_000)).toBe(3_600_000);
  });
});
