// The claimers' shared steps in core (`@rowclaim/core/driver`): matching a statement's answer to
// the rows it named, the advisory candidate window and key counts, taking candidates in waves,
// and the `LEASE_LOST` of a settlement that changed nothing. The drivers' own tests and the
// conformance suite prove them against the real databases; these pin the rules.
import { describe, expect, it } from "vitest";
import {
  advisoryRowGone,
  allHeld,
  firstRowsPerKey,
  heldAmong,
  heldAmongOnce,
  KeyCounts,
  keepTakenOnFailure,
  leaseLostOnSettle,
  rowIdKey,
  type TakeOutcome,
  takeInWaves,
} from "../src/driver-api.js";
import { BrokerError, type LogDetails, type Logger } from "../src/index.js";

describe("answered rows", () => {
  it("compares ids as text, and bytes by their bytes", () => {
    expect(rowIdKey(12)).toBe("12");
    expect(rowIdKey(12n)).toBe("12");
    expect(rowIdKey("12")).toBe("12");
    expect(rowIdKey(new Uint8Array([0, 255, 16]))).toBe("00ff10");
    expect(rowIdKey(Buffer.from([0, 255, 16]))).toBe("00ff10");
  });

  it("says, in order, which held rows the answer names", () => {
    const held = [{ id: 1 }, { id: "2" }, { id: 3 }, { id: 1 }];
    expect(heldAmong(held, ["1", 2])).toEqual([true, true, false, true]);
    expect(heldAmong(held, [{ rc_id: 3 }], (row) => row.rc_id)).toEqual([false, false, true, false]);
    expect(heldAmong([], [1])).toEqual([]);
  });

  it("lets each answered id answer one hold when counted once", () => {
    const held = [{ id: 1 }, { id: 2 }, { id: 1 }];
    expect(heldAmongOnce(held, [1])).toEqual([true, false, false]);
    expect(heldAmongOnce(held, [1, 1, 2])).toEqual([true, true, true]);
    expect(heldAmongOnce([{ id: Buffer.from("ab") }], [Buffer.from("ab")])).toEqual([true]);
  });

  it("reads every held row as answered when the database says all changed", () => {
    expect(allHeld([{ id: 1 }, { id: 1 }, { id: 2 }])).toEqual([true, true, true]);
    expect(allHeld([])).toEqual([]);
  });
});

describe("the advisory candidate window", () => {
  const rows = [
    { id: 1, key: "a" },
    { id: 2, key: "a" },
    { id: 3, key: "b" },
    { id: 4, key: "a" },
    { id: 5, key: "c" },
  ];
  const keyOf = (row: { key: string }): string => row.key;
  const idOf = (row: { id: number }, key: string): string => `${key}${row.id}`;

  it("keeps the first rows of each key, up to its limit, in order", () => {
    expect(firstRowsPerKey(rows, 1, 10, keyOf, idOf)).toEqual(["a1", "b3", "c5"]);
    expect(firstRowsPerKey(rows, 2, 10, keyOf, idOf)).toEqual(["a1", "a2", "b3", "c5"]);
  });

  it("stops at the most it was asked for", () => {
    expect(firstRowsPerKey(rows, 2, 3, keyOf, idOf)).toEqual(["a1", "a2", "b3"]);
    expect(firstRowsPerKey(rows, 1, 0, keyOf, idOf)).toEqual([]);
  });

  it("counts the holds of each key", () => {
    const counts = new KeyCounts();
    counts.add("a");
    counts.add("a");
    counts.add("b");
    expect(counts.count("a")).toBe(2);
    expect(counts.keysHeld()).toEqual(["a", "b"]);
    expect(counts.keysHeld(2)).toEqual(["a"]);
    counts.remove("a");
    counts.remove("b");
    counts.remove("b");
    expect(counts.count("a")).toBe(1);
    expect(counts.count("b")).toBe(0);
    expect(counts.keysHeld()).toEqual(["a"]);
  });
});

describe("taking candidates in waves", () => {
  /** A take that answers from a script, recording each wave's candidates and which was first. */
  function scripted(outcomes: Record<number, TakeOutcome<string> | Error>) {
    const tried: [number, boolean][] = [];
    const take = async (candidate: number, first: boolean): Promise<TakeOutcome<string>> => {
      tried.push([candidate, first]);
      const outcome = outcomes[candidate];
      if (outcome instanceof Error) throw outcome;
      return outcome === undefined ? `row${candidate}` : outcome;
    };
    return { tried, take };
  }

  it("tries as many as rows are still wanted, wave after wave, until enough are taken", async () => {
    const { tried, take } = scripted({ 2: null, 3: "refused" });
    const taken: string[] = [];
    const end = await takeInWaves([1, 2, 3, 4, 5, 6], 0, 3, taken, take);
    expect(taken).toEqual(["row1", "row4", "row5"]);
    // Waves: [1,2,3] (one taken), then [4,5] (two more).
    expect(tried).toEqual([
      [1, true],
      [2, false],
      [3, false],
      [4, false],
      [5, false],
    ]);
    expect(end).toEqual({ next: 5, refused: true, stopped: null });
  });

  it("stops after a refusal when told to", async () => {
    const { take } = scripted({ 1: "refused" });
    const taken: string[] = [];
    const end = await takeInWaves([1, 2, 3, 4], 0, 2, taken, take, true);
    expect(taken).toEqual(["row2"]);
    expect(end).toEqual({ next: 2, refused: true, stopped: null });
  });

  it("stops after a wave that failed or starved, keeping what it took", async () => {
    const boom = new Error("boom");
    const failed: string[] = [];
    const end = await takeInWaves([1, 2, 3], 0, 2, failed, scripted({ 2: boom }).take);
    expect(failed).toEqual(["row1"]);
    expect(end).toEqual({ next: 2, refused: false, stopped: "failed", failure: boom });
    const starved: string[] = [];
    const later = await takeInWaves([1, 2, 3], 1, 3, starved, scripted({ 2: "starved" }).take);
    expect(starved).toEqual(["row3"]);
    expect(later).toEqual({ next: 3, refused: false, stopped: "starved" });
  });

  it("ends at once when nothing is wanted or left", async () => {
    const { tried, take } = scripted({});
    expect(await takeInWaves([1], 1, 2, [], take)).toEqual({ next: 1, refused: false, stopped: null });
    expect(await takeInWaves([1], 0, 1, ["held"], take)).toEqual({ next: 0, refused: false, stopped: null });
    expect(tried).toEqual([]);
  });

  it("throws a failure when nothing was taken, and logs it when rows were", () => {
    const logged: [string, LogDetails | undefined][] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: () => undefined,
      error: (message, details) => logged.push([message, details]),
    };
    const error = new Error("lost");
    expect(() => keepTakenOnFailure(logger, "jobs", "taking a row", 0, error)).toThrow(error);
    expect(logged).toEqual([]);
    keepTakenOnFailure(logger, "jobs", "taking a row", 2, error);
    expect(logged).toHaveLength(1);
    expect(logged[0]?.[1]).toEqual({ err: error, table: "jobs" });
  });
});

describe("a settlement that changed nothing", () => {
  it("is LEASE_LOST naming the table", () => {
    const lease = leaseLostOnSettle("jobs", 7, new Date(0), "delete");
    expect(BrokerError.is(lease, "LEASE_LOST")).toBe(true);
    expect(lease.table).toBe("jobs");
    const gone = advisoryRowGone("jobs", 7, "jobs-7", "release");
    expect(BrokerError.is(gone, "LEASE_LOST")).toBe(true);
    expect(gone.table).toBe("jobs");
  });
});
