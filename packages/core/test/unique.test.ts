import { describe, expect, it } from "vitest";
import { BrokerError, defineTable } from "../src/index.js";
import { resolveUnique } from "../src/unique.js";

const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", runAt: "run_at", lockedUntil: "locked_until", key: "job_key" },
});
const now = new Date(1_000_000);

describe("resolveUnique", () => {
  it("maps each mode onto keep or replace and the run time it writes", () => {
    expect(resolveUnique(table, { key: "k" }, now)).toEqual({
      key: "k",
      onConflict: "keep",
      runAt: undefined,
    });
    expect(resolveUnique(table, { key: "k", mode: "replace" }, now).onConflict).toBe("replace");
    expect(resolveUnique(table, { key: "k", mode: "debounce", period: 500 }, now)).toEqual({
      key: "k",
      onConflict: "replace",
      runAt: new Date(1_000_500),
    });
    expect(resolveUnique(table, { key: "k", mode: "throttle", period: 300_000 }, now)).toEqual({
      key: "k",
      onConflict: "keep",
      runAt: new Date(300_000 * 4),
    });
    expect(resolveUnique(table, {}, now).key).toBeNull();
  });

  it("refuses bad input with INVALID_ARGUMENT", () => {
    const plain = defineTable({ name: "plain", columns: { id: "id", payload: "payload" } });
    const bad: [typeof table, Record<string, unknown>][] = [
      [table, { key: "k", mode: "sometimes" }],
      [plain, { key: "k" }],
      [table, { key: 5 }],
      [table, { key: "" }],
      [table, { key: "k", mode: "throttle", period: 0 }],
      [table, { key: "k", mode: "debounce", period: -1 }],
      [table, { key: "k", mode: "debounce" }],
      [table, { key: "k", mode: "keep", period: 10 }],
      [table, { key: "k", mode: "throttle", period: 10, runAt: now }],
      [table, { mode: "keep" }],
    ];
    for (const [target, options] of bad) {
      expect(() => resolveUnique(target, options, now), JSON.stringify(options)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT" }),
      );
    }
  });

  it("refuses a key column in the row lock form", () => {
    let caught: unknown;
    try {
      defineTable({ name: "rl", columns: { id: "id", payload: "payload", key: "job_key" } });
    } catch (error) {
      caught = error;
    }
    expect(BrokerError.is(caught, "DECLARATION")).toBe(true);
  });
});
