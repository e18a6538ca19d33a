// Core's lease runtime on the in-memory reference driver, deterministically: which claimer call
// each ack took is counted from the driver's calls; lease time is the test's clock, and the
// half-lease extension timer is a fake one the test advances.
import {
  ack,
  BrokerError,
  type Delivery,
  type HandlerResult,
  retry,
  retryAfter,
  type TableDescription,
} from "@rowclaim/core";
import type { Acks, Driver, HeldLease, LeaseClaimer, LeaseClaimRequest } from "@rowclaim/core/driver";
import { drainTable } from "@rowclaim/core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Seen, see } from "../src/deliveries.js";
import { waitFor } from "../src/wait.js";
import { changeRows, deferred, replacingClaimerMethod, type SetUp, START, setUp } from "./memory-setup.js";

const lease = (name: string, more: Partial<TableDescription["columns"]> = {}): TableDescription => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until", ...more },
  lease: 30,
});

/** Another process took row `id`'s lease behind the broker's back: the row holds another token now. */
/** What {@link heldBackClaim} holds back: the one claim that starts while the first delivery runs. */
interface HeldBackClaim {
  readonly driver: Driver;
  /** Whether the claim was held back (the scenario ran as written). */
  heldBack(): boolean;
}

/**
 * Wraps `inner`'s claims: the claim that starts while the first delivery runs waits for `gate`
 * (the first delivery's row let go), runs (with `request` rewritten, if given), and only once it
 * answered resolves `answered`, which the letting-go's own answer waits for.
 */
function heldBackClaim(
  inner: Driver,
  seen: readonly Seen[],
  gate: Promise<void>,
  answered: { resolve(): void },
  request: (claim: Parameters<LeaseClaimer["claim"]>[0]) => Parameters<LeaseClaimer["claim"]>[0] = (claim) =>
    claim,
): HeldBackClaim {
  let heldBack = false;
  const driver = replacingClaimerMethod<LeaseClaimer>(inner, "claim", (claimer) => {
    return async (claim: Parameters<LeaseClaimer["claim"]>[0]) => {
      if (seen.length !== 1 || heldBack) return claimer.claim(claim);
      heldBack = true;
      await gate;
      const claimed = await claimer.claim(request(claim));
      setImmediate(() => answered.resolve());
      return claimed;
    };
  });
  return { driver, heldBack: () => heldBack };
}

/**
 * Subscribes two workers with a minute's poll interval (only a delivery of what the claims took
 * brings the row back in time), publishes one row whose first delivery ends by `first`, and
 * checks that the row was delivered again and acked, with the claim held back as planned.
 */
async function expectDeliveredAgain(
  t: SetUp,
  held: HeldBackClaim,
  seen: Seen[],
  first: (delivery: Delivery<unknown>) => HandlerResult | Promise<HandlerResult>,
): Promise<void> {
  const broker = t.broker({}, held.driver);
  const subscription = await broker.subscribe(
    t.table,
    (delivery) => {
      see(seen, delivery);
      return seen.length === 1 ? first(delivery) : ack();
    },
    { workers: 2, pollInterval: 60_000 },
  );
  await broker.publish(t.table, "again");
  await waitFor("the row to be delivered again and acked", () => seen.length >= 2 && t.rows().length === 0);
  await broker.close();
  expect(held.heldBack()).toBe(true);
  expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
  expect(subscription.stats).toMatchObject({ retried: 1, acked: 1, settleErrors: 0 });
}

function takeLease(t: SetUp, id: number): void {
  changeRows(t, (row) =>
    row.id === id ? { locked_until: new Date(START.getTime() + 3_600_000) } : undefined,
  );
}

afterEach(() => {
  vi.useRealTimers();
});

describe("with rows held ahead and several workers, a claim on a busy queue waits for a claim's worth of room", () => {
  it("every claim after one that found all it asked for asks for at least the most per claim less one row per worker", async () => {
    const t = setUp(lease("claim_worth"));
    // Each claim's limit and how many rows it found, in the order the claims answered.
    const claims: { limit: number; found: number }[] = [];
    const recorded = replacingClaimerMethod<LeaseClaimer>(
      replacingClaimerMethod<LeaseClaimer>(
        t.driver,
        "claim",
        (claimer) => async (request: LeaseClaimRequest) => {
          const claimed = await claimer.claim(request);
          claims.push({ limit: request.limit, found: claimed.length });
          return claimed;
        },
      ),
      "claimWithAcks",
      (claimer) => async (acks: Acks<HeldLease>, request: LeaseClaimRequest) => {
        if (claimer.claimWithAcks === undefined) throw new Error("the memory driver carries acks");
        const answer = await claimer.claimWithAcks(acks, request);
        claims.push({ limit: request.limit, found: answer.claimed.length });
        return answer;
      },
    );
    const broker = t.broker({}, recorded);
    const rows = 3_000;
    await broker.publishMany(
      t.table,
      Array.from({ length: rows }, (_, payload) => ({ payload })),
    );
    // 8 workers and 500 ahead: a claim takes at most 254 rows, and waits for room for 246.
    await broker.subscribe(t.table, async () => ack(), { workers: 8, prefetch: 500, batch: 508 });
    const drained = await drainTable(broker, t.table);
    await broker.close();
    expect(drained.deliveries).toHaveLength(rows);
    const afterFull = claims.filter(
      (_, index) => index > 0 && claims[index - 1]?.found === claims[index - 1]?.limit,
    );
    expect(afterFull.length).toBeGreaterThan(0);
    expect(afterFull.filter((claim) => claim.limit < 246)).toEqual([]);
  });
});

describe("lease acks on a driver without settleMany and claimWithAcks", () => {
  it("go one settle() each", async () => {
    const t = setUp(lease("alone"), { without: ["settleMany", "claimWithAcks"] });
    const broker = t.broker();
    await broker.publishMany(t.table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await broker.subscribe(t.table, () => ack(), { workers: 3 });
    await drainTable(broker, t.table);
    await broker.close();
    expect({ settle: t.count("settle"), settleMany: t.count("settleMany") }).toEqual({
      settle: 3,
      settleMany: 0,
    });
  });
});

describe("lease acks on a driver with settleMany but no claimWithAcks", () => {
  /** Three rows in work at once, released together: the first ack goes at once, the two ready while it runs next. */
  async function threeAcksAtOnce(name: string, change?: (t: SetUp) => void) {
    const t = setUp(lease(name, { processedAt: "processed_at" }), { without: ["claimWithAcks"] });
    const broker = t.broker();
    await broker.publishMany(t.table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const gate = deferred();
    const subscription = await broker.subscribe(
      t.table,
      async () => {
        await gate.promise;
        return ack();
      },
      { workers: 3 },
    );
    await waitFor("three rows in work", () => subscription.inWork === 3);
    change?.(t);
    gate.resolve();
    return { t, broker, subscription };
  }

  it("send a lone ack with settle() and the acks ready while it runs as one settleMany()", async () => {
    const { t, broker } = await threeAcksAtOnce("many");
    await waitFor("every row processed", () => t.rows().every((row) => row.processed_at !== null));
    await broker.close();
    expect({ settle: t.count("settle"), settleMany: t.count("settleMany") }).toEqual({
      settle: 1,
      settleMany: 1,
    });
  });

  it("fail with LEASE_LOST only the ack whose row holds another token; settleMany settles the others", async () => {
    const { t, broker, subscription } = await threeAcksAtOnce("many_lost", (t) => takeLease(t, 3));
    const lost: unknown[] = [];
    broker.on("leaseLost", ({ id }) => lost.push(id));
    await waitFor("the lost ack to be counted", () => subscription.stats.settleErrors === 1);
    await broker.close();
    expect(lost).toEqual([3]);
    expect(t.rows().map((row) => [row.id, row.processed_at !== null])).toEqual([
      [1, true],
      [2, true],
      [3, false],
    ]);
  });

  it("send each ack alone when the database refuses the settleMany, so that only the refused row fails", async () => {
    const { t, broker, subscription } = await threeAcksAtOnce("many_refused", ({ database, table }) => {
      database.refuseNonNull(table, "processed_at", 3);
    });
    await waitFor("the refused ack to be counted", () => subscription.stats.settleErrors === 1);
    await broker.close();
    expect(t.count("settleMany")).toBe(1);
    expect(t.rows().map((row) => [row.id, row.processed_at !== null])).toEqual([
      [1, true],
      [2, true],
      [3, false],
    ]);
  });
});

describe("lease extension", () => {
  it("moves the lease of a row in work each half lease; an extension that fails is logged and made again at the next", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let failures = 1;
    const t = setUp(lease("extended"));
    const driver = replacingClaimerMethod<LeaseClaimer>(t.driver, "extend", (claimer) => {
      return (...args: Parameters<LeaseClaimer["extend"]>) => {
        if (failures-- > 0) return Promise.reject(new BrokerError("CONNECTION_LOST", "the extension failed"));
        return claimer.extend(...args);
      };
    });
    const broker = t.broker({}, driver);
    await broker.publish(t.table, "long");
    const gate = deferred();
    const subscription = await broker.subscribe(t.table, async () => {
      await gate.promise;
      return ack();
    });
    await waitFor("the row in work", () => subscription.inWork === 1);
    t.clock.advance(10_000);
    vi.advanceTimersByTime(15_000);
    await waitFor("the failed extension to be logged", () =>
      t.logged.some((entry) => entry.message.includes("extending 1 lease(s) failed")),
    );
    vi.advanceTimersByTime(15_000);
    const extended = new Date(START.getTime() + 40_000);
    await waitFor("the lease moved", () => t.rows()[0]?.locked_until?.valueOf() === extended.valueOf());
    gate.resolve();
    await drainTable(broker, t.table);
    await broker.close();
    expect(subscription.stats.acked).toBe(1);
  });

  it("that finds the row under another token loses the lease: the delivery's signal aborts and its ack fails with LEASE_LOST", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const t = setUp(lease("taken"));
    const broker = t.broker();
    const lost: unknown[] = [];
    broker.on("leaseLost", ({ id }) => lost.push(id));
    await broker.publish(t.table, "taken over");
    const gate = deferred();
    let aborted = false;
    const subscription = await broker.subscribe(t.table, async (delivery) => {
      delivery.signal.addEventListener("abort", () => {
        aborted = true;
      });
      await gate.promise;
      return ack();
    });
    await waitFor("the row in work", () => subscription.inWork === 1);
    takeLease(t, 1);
    vi.advanceTimersByTime(15_000);
    await waitFor("the delivery's signal to abort", () => aborted);
    gate.resolve();
    await waitFor("the lost ack to be counted", () => subscription.stats.settleErrors === 1);
    await broker.close();
    expect(lost).toEqual([1]);
    expect(t.rows()).toHaveLength(1);
  });
});

describe("retryAfter on a lease table without runAt", () => {
  it("moves the row's lease to the due time (a whole second) and lets it go", async () => {
    const t = setUp(lease("delayed"));
    const broker = t.broker();
    await broker.publish(t.table, "later");
    const subscription = await broker.subscribe(t.table, () => retryAfter(4_500));
    await waitFor("the retry to be counted", () => subscription.stats.retried === 1);
    await broker.close();
    expect(t.rows()[0]?.locked_until).toEqual(new Date(START.getTime() + 5_000));
  });

  it("fails with LEASE_LOST where the row holds another token, and changes nothing", async () => {
    const t = setUp(lease("delayed_lost"));
    const broker = t.broker();
    await broker.publish(t.table, "later");
    const subscription = await broker.subscribe(t.table, () => {
      takeLease(t, 1);
      return retryAfter(4_500);
    });
    await waitFor("the lost retry to be counted", () => subscription.stats.settleErrors === 1);
    await broker.close();
    expect(subscription.stats.retried).toBe(0);
    expect(t.rows()[0]?.locked_until).toEqual(new Date(START.getTime() + 3_600_000));
  });
});

describe("a claim that takes back a row this subscription still holds", () => {
  it("keeps the row with its delivery in work, under the claim's new token: the row is delivered once and its ack settles", async () => {
    const t = setUp(lease("adopted"));
    const broker = t.broker();
    const [first] = await broker.publishMany(t.table, [{ payload: "slow" }]);
    const gate = deferred();
    const seen: unknown[] = [];
    const subscription = await broker.subscribe(
      t.table,
      async (delivery) => {
        seen.push(delivery.id);
        if (delivery.id === first) await gate.promise;
        return ack();
      },
      { workers: 2, extendLeases: false },
    );
    await waitFor("the row in work", () => subscription.inWork === 1);
    // The lease ran out while the handler ran (the process stood still): the row is claimable again.
    t.clock.advance(31_000);
    const [second] = await broker.publishMany(t.table, [{ payload: "next" }]);
    await waitFor("the second row delivered", () => seen.includes(second));
    gate.resolve();
    await drainTable(broker, t.table);
    await broker.close();
    expect(seen).toEqual([first, second]);
    expect(subscription.stats).toMatchObject({ acked: 2, settleErrors: 0 });
  });
});

describe("a claim that takes a row this subscription's own retry released, answered before the release", () => {
  it("delivers the row again (not kept by the retried delivery's hold), and the redelivery acks it", async () => {
    // As on MySQL/MariaDB: acks go by settleMany, no claim carries them.
    const t = setUp(lease("released_first"), { without: ["claimWithAcks"] });
    const seen: Seen[] = [];
    const released = deferred();
    const claimedAfterRelease = deferred();
    // The retry's release commits, but its answer comes back only after the answer of a claim
    // that read the table after that commit (two connections; the database may even show a
    // commit to others before its own client hears of it).
    const settling = replacingClaimerMethod<LeaseClaimer>(t.driver, "settle", (claimer) => {
      return async (...args: Parameters<LeaseClaimer["settle"]>) => {
        await claimer.settle(...args);
        if (args[2].kind !== "release") return;
        released.resolve();
        await claimedAfterRelease.promise;
      };
    });
    // The claim that starts while the first delivery runs reads the table once the release committed.
    const held = heldBackClaim(settling, seen, released.promise, claimedAfterRelease);
    await expectDeliveredAgain(t, held, seen, () => retry());
  });
});

describe("a claim that takes a row this subscription's own delayed retry let go, answered before the delay", () => {
  it("delivers the row again once due (not kept by the retried delivery's hold), and the redelivery acks it", async () => {
    const t = setUp(lease("delayed_first"), { without: ["claimWithAcks"] });
    const seen: Seen[] = [];
    const delayed = deferred();
    const claimedAfterDelay = deferred();
    // The retry's delay (the lease moved to the due time) commits and the due time comes, but
    // the delay's answer comes back only after that of a claim that took the row once due.
    const extending = replacingClaimerMethod<LeaseClaimer>(t.driver, "extend", (claimer) => {
      return async (...args: Parameters<LeaseClaimer["extend"]>) => {
        const tokens = await claimer.extend(...args);
        if (seen.length !== 1) return tokens;
        t.clock.advance(10_000);
        delayed.resolve();
        await claimedAfterDelay.promise;
        return tokens;
      };
    });
    // The claim reads the clock when it starts: it starts once the due time came.
    const held = heldBackClaim(extending, seen, delayed.promise, claimedAfterDelay, (request) => {
      const now = t.clock.asFunction();
      return { ...request, now, expiry: new Date(now.getTime() + 30_000) };
    });
    await expectDeliveredAgain(t, held, seen, () => retryAfter(2_000));
  });
});

describe("a claim that takes a row this subscription's own transactional retry released, answered before the commit", () => {
  it("delivers the row again (not kept by the retried delivery's hold), and the redelivery acks it", async () => {
    const t = setUp(lease("committed_first"), { without: ["claimWithAcks"] });
    const seen: Seen[] = [];
    const committed = deferred();
    const claimedAfterCommit = deferred();
    // The body's retry commits, but the commit's answer comes back only after that of a claim that read after it.
    const committing = replacingClaimerMethod<LeaseClaimer>(t.driver, "transaction", (claimer) => {
      return async (...args: Parameters<NonNullable<LeaseClaimer["transaction"]>>) => {
        await claimer.transaction?.(...args);
        committed.resolve();
        await claimedAfterCommit.promise;
      };
    });
    const held = heldBackClaim(committing, seen, committed.promise, claimedAfterCommit);
    await expectDeliveredAgain(t, held, seen, async (delivery) => {
      await delivery.transaction(() => retry());
      return undefined;
    });
  });
});
