import { describe, expect, it } from "vitest";
import {
  CLAIM_FAILED,
  CLAIM_GATED,
  CLAIM_TRANSITIONS,
  type ClaimState,
  claimRoom,
  claimsAhead,
  idleWaitMs,
  leastPerClaim,
  mostPerClaim,
  settlingRoom,
  stateAfterClaim,
} from "../src/subscription-scheduler.js";

const settings = { workers: 4, batch: 10, prefetch: 0, pollInterval: 1000 };

describe("the claim loop's transitions", () => {
  it("every state but closed can be left, and every state is reached from another", () => {
    const states = Object.keys(CLAIM_TRANSITIONS) as ClaimState[];
    const reached = new Set(states.flatMap((state) => [...CLAIM_TRANSITIONS[state]]));
    for (const state of states) {
      if (state !== "closed") expect(CLAIM_TRANSITIONS[state].length).toBeGreaterThan(0);
      if (state !== "ready") expect(reached.has(state)).toBe(true);
    }
    expect(CLAIM_TRANSITIONS.closed).toEqual([]);
  });
  it("only a running loop (ready, yielding, claiming) starts draining, and draining only closes", () => {
    const draining = (Object.keys(CLAIM_TRANSITIONS) as ClaimState[]).filter((state) =>
      (CLAIM_TRANSITIONS[state] as readonly ClaimState[]).includes("draining"),
    );
    expect(draining.sort()).toEqual(["claiming", "ready", "yielding"]);
    expect(CLAIM_TRANSITIONS.draining).toEqual(["closed"]);
  });
  it("every wait (room, idle, gated, backing off) returns to ready", () => {
    for (const state of ["awaitingRoom", "idle", "gated", "backingOff"] as const)
      expect(CLAIM_TRANSITIONS[state]).toEqual(["ready"]);
  });
});

describe("after a claim it waited for, the loop claims again, sleeps or backs off", () => {
  it("rows found: it claims again at once", () => {
    expect(stateAfterClaim(3, 0)).toBe("ready");
  });
  it("nothing found and no claim ahead: idle until a wake or the poll", () => {
    expect(stateAfterClaim(0, 0)).toBe("idle");
  });
  it("nothing found while claims run ahead: ready (they wake it when they end)", () => {
    expect(stateAfterClaim(0, 1)).toBe("ready");
    expect(stateAfterClaim(CLAIM_GATED, 2)).toBe("ready");
  });
  it("the gate let it take nothing: gated", () => {
    expect(stateAfterClaim(CLAIM_GATED, 0)).toBe("gated");
  });
  it("the claim failed: backing off, even with claims ahead", () => {
    expect(stateAfterClaim(CLAIM_FAILED, 0)).toBe("backingOff");
    expect(stateAfterClaim(CLAIM_FAILED, 3)).toBe("backingOff");
  });
  it("an idle or gated loop sleeps the poll interval, or less where the rate window ends sooner", () => {
    expect(idleWaitMs(undefined, 1000)).toBe(1000);
    expect(idleWaitMs(250, 1000)).toBe(250);
    expect(idleWaitMs(5000, 1000)).toBe(1000);
  });
});

describe("a claim takes at most the room left by held rows and claims in flight", () => {
  it("the room is the capacity less running, waiting and reserved rows", () => {
    expect(claimRoom(4, 1, 0, 1, 0)).toBe(3);
    expect(claimRoom(4, 1, 1, 2, 1)).toBe(1);
    expect(claimRoom(4, 4, 0, 4, 0)).toBe(0);
  });
  it("rows whose settlements are in flight are held, at most a capacity more", () => {
    // Nothing running, but 7 rows still held by settlements in flight: one slot left.
    expect(claimRoom(4, 0, 0, 7, 0)).toBe(1);
    expect(claimRoom(4, 0, 0, 8, 0)).toBe(0);
    expect(claimRoom(4, 0, 0, 8, 0, 8)).toBe(4);
    expect(claimRoom(4, 0, 0, 12, 0, 8)).toBe(0);
  });
  it("a lease subscription with prefetch holds twice its capacity in settlements in flight; others, its capacity", () => {
    const ahead = { ...settings, workers: 8, batch: 508, prefetch: 500 };
    expect(settlingRoom("lease", ahead)).toBe(1016);
    expect(settlingRoom("lease", settings)).toBe(4);
    expect(settlingRoom("rowLock", ahead)).toBe(508);
    expect(settlingRoom("advisory", settings)).toBe(4);
  });
  it("without prefetch (or outside the lease form) a claim asks for a whole batch", () => {
    expect(mostPerClaim("lease", settings)).toBe(10);
    expect(mostPerClaim("rowLock", { ...settings, prefetch: 20 })).toBe(10);
    expect(mostPerClaim("advisory", { ...settings, prefetch: 20 })).toBe(10);
  });
  it("with prefetch, a lease claim takes at most half the room, so two claims overlap", () => {
    expect(mostPerClaim("lease", { ...settings, prefetch: 4 })).toBe(4);
    expect(mostPerClaim("lease", { ...settings, batch: 3, prefetch: 4 })).toBe(3);
    expect(mostPerClaim("lease", { ...settings, workers: 1, batch: 1, prefetch: 1 })).toBe(1);
  });
});

describe("on a busy queue, a lease claim with rows held ahead waits for a claim's worth of room", () => {
  it("with prefetch and several workers, the least is the most per claim less one row per worker", () => {
    const ahead = { ...settings, workers: 8, batch: 1000, prefetch: 500 };
    expect(mostPerClaim("lease", ahead)).toBe(254);
    expect(leastPerClaim("lease", ahead)).toBe(246);
  });
  it("one worker, no prefetch, or another form: any room is claimed", () => {
    expect(leastPerClaim("lease", { ...settings, workers: 1, batch: 1000, prefetch: 500 })).toBe(1);
    expect(leastPerClaim("lease", { ...settings, batch: 1000 })).toBe(1);
    expect(leastPerClaim("rowLock", { ...settings, batch: 1000, prefetch: 500 })).toBe(1);
    expect(leastPerClaim("advisory", settings)).toBe(1);
  });
  it("never more than the most per claim, never less than one row", () => {
    expect(leastPerClaim("lease", { ...settings, workers: 8, batch: 3, prefetch: 4 })).toBe(1);
    expect(leastPerClaim("lease", { ...settings, workers: 2, batch: 10, prefetch: 30 })).toBe(8);
  });
});

describe("a claim runs ahead only on a busy queue, where waiting could not make it larger", () => {
  it("after a claim that found less than it asked for, the loop waits for the claim", () => {
    expect(claimsAhead(false, 1, 4, 1)).toBe(false);
    expect(claimsAhead(false, 10, 10, 10)).toBe(false);
  });
  it("on a busy queue, a claim that leaves room unfilled runs ahead", () => {
    expect(claimsAhead(true, 1, 4, 1)).toBe(true);
  });
  it("on a busy queue, a claim as large as a claim may be runs ahead", () => {
    expect(claimsAhead(true, 10, 10, 10)).toBe(true);
  });
  it("on a busy queue, a smaller claim that takes all the room is waited for, so the room adds up", () => {
    expect(claimsAhead(true, 3, 3, 10)).toBe(false);
  });
});
