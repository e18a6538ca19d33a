/** The latency run's interleaved rounds: every queue gets all its jobs, in shares that take turns. */
import { describe, expect, it } from "vitest";
import { latencyTurns } from "../src/latency.js";

describe("the latency run takes its jobs in interleaved rounds", () => {
  it("gives every subject exactly the jobs it wants, in equal shares and the rest last", () => {
    const turns = latencyTurns([200, 200, 10], 3);
    const sums = [0, 0, 0];
    for (const { index, count } of turns) sums[index] = (sums[index] ?? 0) + count;
    expect(sums).toEqual([200, 200, 10]);
    expect(turns.filter((turn) => turn.index === 0).map((turn) => turn.count)).toEqual([67, 67, 66]);
    expect(turns.filter((turn) => turn.index === 2).map((turn) => turn.count)).toEqual([4, 4, 2]);
  });

  it("starts each round one subject later, so none always goes first", () => {
    const firsts = [0, 3, 6].map((at) => latencyTurns([9, 9, 9], 3)[at]?.index);
    expect(firsts).toEqual([0, 1, 2]);
  });

  it("leaves a subject out of the rounds after it has all its jobs", () => {
    expect(latencyTurns([2, 5], 5)).toEqual([
      { index: 0, count: 1 },
      { index: 1, count: 1 },
      { index: 1, count: 1 },
      { index: 0, count: 1 },
      { index: 1, count: 1 },
      { index: 1, count: 1 },
      { index: 1, count: 1 },
    ]);
  });

  it("refuses a number of rounds that is not a whole number of at least 1", () => {
    expect(() => latencyTurns([10], 0)).toThrow(RangeError);
    expect(() => latencyTurns([10], 1.5)).toThrow(/whole number/);
  });
});
