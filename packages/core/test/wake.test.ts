import { describe, expect, it } from "vitest";
import { WakeSignal } from "../src/wake.js";

describe("a wake-up that comes in during a claim is not lost", () => {
  it("wait returns at once when a wake came after the generation was read", async () => {
    const signal = new WakeSignal();
    const generation = signal.generation;
    signal.wake();
    let done = false;
    const waiting = signal.wait(60_000, generation).then(() => {
      done = true;
    });
    await waiting;
    expect(done).toBe(true);
  });
  it("a wake ends a wait early", async () => {
    const signal = new WakeSignal();
    const waiting = signal.wait(60_000, signal.generation);
    signal.wake();
    await expect(waiting).resolves.toBeUndefined();
  });
});
