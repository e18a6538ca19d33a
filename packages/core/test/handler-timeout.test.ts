import { afterEach, describe, expect, it, vi } from "vitest";
import { DueWake } from "../src/due-wake.js";
import { BrokerError, DeclarationError } from "../src/errors.js";
import { deliveryTimeout, HandlerDeadline } from "../src/handler-timeout.js";
import { checkHandlerTimeout } from "../src/options-check.js";
import { defineTable } from "../src/table.js";

const fail = (problem: string, fix: string): never => {
  throw new DeclarationError(`${problem}. ${fix}`);
};

afterEach(() => {
  vi.useRealTimers();
});

describe("subscribe's timeout and timeoutGrace are checked like every option", () => {
  it("resolves a timeout with the default grace, and a given grace", () => {
    expect(checkHandlerTimeout({}, fail)).toBeUndefined();
    expect(checkHandlerTimeout({ timeout: 1000 }, fail)).toEqual({ timeoutMs: 1000, graceMs: 5000 });
    expect(checkHandlerTimeout({ timeout: 1000, timeoutGrace: 0 }, fail)).toEqual({
      timeoutMs: 1000,
      graceMs: 0,
    });
  });
  it.each([
    [{ timeout: 0 }],
    [{ timeout: -5 }],
    [{ timeout: 1.5 }],
    [{ timeout: Number.POSITIVE_INFINITY }],
    [{ timeout: 2 ** 31 }],
    [{ timeout: "1000" as unknown as number }],
    [{ timeout: 1000, timeoutGrace: -1 }],
    [{ timeoutGrace: 1000 }],
  ])("refuses %o with DECLARATION", (options) => {
    let caught: unknown;
    try {
      checkHandlerTimeout(options, fail);
    } catch (error) {
      caught = error;
    }
    expect(BrokerError.is(caught, "DECLARATION")).toBe(true);
  });
});

describe("a row's own timeout (timeoutColumn)", () => {
  const table = defineTable({
    name: "jobs",
    columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
    extraColumns: ["timeout_ms"],
  });

  it("names one of the table's extra columns, with or without a subscription timeout", () => {
    expect(checkHandlerTimeout({ timeoutColumn: "timeout_ms" }, fail, table)).toEqual({
      timeoutMs: undefined,
      graceMs: 5000,
      column: "timeout_ms",
    });
    for (const options of [{ timeoutColumn: "payload" }, { timeoutColumn: "nope", timeout: 1000 }]) {
      let caught: unknown;
      try {
        checkHandlerTimeout(options, fail, table);
      } catch (error) {
        caught = error;
      }
      expect(BrokerError.is(caught, "DECLARATION"), JSON.stringify(options)).toBe(true);
    }
  });

  it("takes the row's whole milliseconds (number or numeric text) over the subscription's, and reports other values", () => {
    const settings = { timeoutMs: 1000, graceMs: 50, column: "timeout_ms" };
    const invalid: unknown[] = [];
    const report = (value: unknown): void => void invalid.push(value);
    expect(deliveryTimeout(settings, { timeout_ms: 200 }, report)).toEqual({ timeoutMs: 200, graceMs: 50 });
    expect(deliveryTimeout(settings, { timeout_ms: "300" }, report)).toEqual({ timeoutMs: 300, graceMs: 50 });
    expect(deliveryTimeout(settings, { timeout_ms: null }, report)).toEqual({ timeoutMs: 1000, graceMs: 50 });
    expect(deliveryTimeout(settings, { timeout_ms: "soon" }, report)).toEqual({
      timeoutMs: 1000,
      graceMs: 50,
    });
    expect(deliveryTimeout({ ...settings, timeoutMs: undefined }, {}, report)).toBeUndefined();
    expect(invalid).toEqual(["soon"]);
  });
});

describe("a handler's deadline", () => {
  it("aborts its signal with HANDLER_TIMEOUT at the timeout, and expires after the grace", async () => {
    vi.useFakeTimers();
    const deadline = new HandlerDeadline({ timeoutMs: 100, graceMs: 50 }, "too slow");
    let expired: unknown;
    void deadline.whenExpired.then((error) => {
      expired = error;
    });
    await vi.advanceTimersByTimeAsync(99);
    expect(deadline.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(BrokerError.is(deadline.signal.reason, "HANDLER_TIMEOUT")).toBe(true);
    expect(deadline.expired).toBe(false);
    await vi.advanceTimersByTimeAsync(50);
    expect(deadline.expired).toBe(true);
    expect(BrokerError.is(expired, "HANDLER_TIMEOUT")).toBe(true);
  });
  it("never fires once cleared", async () => {
    vi.useFakeTimers();
    const deadline = new HandlerDeadline({ timeoutMs: 100, graceMs: 50 }, "cleared");
    deadline.clear();
    await vi.advanceTimersByTimeAsync(1000);
    expect(deadline.signal.aborted).toBe(false);
    expect(deadline.expired).toBe(false);
  });
});

describe("the due-time wake", () => {
  it("wakes once at the earliest time it was told of, by its clock", async () => {
    vi.useFakeTimers();
    let now = 1_000;
    const wakes: number[] = [];
    const due = new DueWake(
      () => wakes.push(now),
      () => now,
    );
    due.at(1_500);
    due.at(1_200);
    due.at(1_900);
    expect(due.dueAt).toBe(1_200);
    // The timer fires, but the clock has not moved: it waits on.
    await vi.advanceTimersByTimeAsync(200);
    expect(wakes).toEqual([]);
    now = 1_200;
    await vi.advanceTimersByTimeAsync(200);
    expect(wakes).toEqual([1_200]);
    expect(due.dueAt).toBeUndefined();
  });
  it("wakes nothing once closed", async () => {
    vi.useFakeTimers();
    const wakes: number[] = [];
    const due = new DueWake(
      () => wakes.push(1),
      () => 0,
    );
    due.at(10);
    due.close();
    due.at(5);
    await vi.advanceTimersByTimeAsync(100);
    expect(wakes).toEqual([]);
  });
});
