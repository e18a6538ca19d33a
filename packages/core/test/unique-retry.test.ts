import { describe, expect, it } from "vitest";
import { retryUniqueAttempt } from "../src/unique-retry.js";

const race = Object.assign(new Error("deadlock"), { code: "race" });
const isRace = (error: unknown): boolean => (error as { code?: unknown }).code === "race";

describe("retryUniqueAttempt", () => {
  it("runs again after a lost race or a retried error, and returns the first result", async () => {
    const script: (() => string | undefined)[] = [
      () => undefined,
      () => {
        throw race;
      },
      () => "done",
    ];
    let calls = 0;
    const result = await retryUniqueAttempt({
      attempt: async () => script[calls++]?.(),
      retried: isRace,
      exhausted: () => new Error("exhausted"),
    });
    expect(result).toBe("done");
    expect(calls).toBe(3);
  });

  it("throws at once an error that is not retried", async () => {
    const other = new Error("other");
    let calls = 0;
    await expect(
      retryUniqueAttempt({
        attempt: async () => {
          calls++;
          throw other;
        },
        retried: isRace,
        exhausted: () => new Error("exhausted"),
      }),
    ).rejects.toBe(other);
    expect(calls).toBe(1);
  });

  it("gives up after the attempts with what exhausted makes of the last retried error", async () => {
    let calls = 0;
    const seen: unknown[] = [];
    await expect(
      retryUniqueAttempt(
        {
          attempt: async () => {
            calls++;
            if (calls === 1) throw race;
            return undefined;
          },
          retried: isRace,
          exhausted: (last) => {
            seen.push(last);
            return new Error("exhausted");
          },
        },
        3,
      ),
    ).rejects.toThrow("exhausted");
    expect(calls).toBe(3);
    expect(seen).toEqual([race]);
  });
});
