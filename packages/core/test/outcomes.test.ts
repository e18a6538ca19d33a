import { describe, expect, it } from "vitest";
import { ack, BrokerError, deadLetter, drop, isOutcome, retry, retryAfter } from "../src/index.js";

describe("outcomes", () => {
  it("each outcome function returns the outcome of its kind", () => {
    expect(ack().kind).toBe("ack");
    expect(retry().kind).toBe("retry");
    expect(drop().kind).toBe("drop");
    expect(deadLetter().kind).toBe("deadLetter");
    expect(retryAfter(250)).toEqual({ kind: "retryAfter", delayMs: 250 });
  });
  it("retryAfter refuses a negative or non-finite delay with INVALID_ARGUMENT", () => {
    for (const delay of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      try {
        retryAfter(delay);
        expect.unreachable();
      } catch (error) {
        expect(BrokerError.is(error, "INVALID_ARGUMENT")).toBe(true);
      }
    }
  });
  it("isOutcome tells outcomes from other values", () => {
    expect(isOutcome(ack())).toBe(true);
    expect(isOutcome({ kind: "retryAfter", delayMs: 5 })).toBe(true);
    expect(isOutcome({ kind: "retryAfter" })).toBe(false);
    expect(isOutcome({ kind: "commit" })).toBe(false);
    expect(isOutcome("ack")).toBe(false);
    expect(isOutcome(null)).toBe(false);
  });
});
