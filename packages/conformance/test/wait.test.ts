import { describe, expect, it } from "vitest";
import { Gate, waitFor, within } from "../src/wait.js";

describe("waitFor polls a probe until it holds", () => {
  it("returns the probe's first value that is not undefined, null or false", async () => {
    let calls = 0;
    const value = await waitFor("the third call", () => (++calls >= 3 ? calls : false), { intervalMs: 1 });
    expect(value).toBe(3);
  });

  it("fails naming what it waited for when the deadline passes", async () => {
    await expect(
      waitFor("a thing that never happens", () => false, { timeoutMs: 20, intervalMs: 5 }),
    ).rejects.toThrow(/a thing that never happens/);
  });
});

describe("Gate holds until opened", () => {
  it("resolves opened once open() is called", async () => {
    const gate = new Gate();
    expect(gate.isOpen).toBe(false);
    gate.open();
    gate.open();
    await gate.opened;
    expect(gate.isOpen).toBe(true);
  });
});

describe("within bounds a promise", () => {
  it("passes a settled value through and fails a promise that never settles", async () => {
    expect(await within("a value", Promise.resolve(1))).toBe(1);
    await expect(within("the never promise", new Promise(() => {}), 10)).rejects.toThrow(/the never promise/);
  });
});
