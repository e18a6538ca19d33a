// Paths of core's lease runtime the other memory tests leave: a broker on the machine's clock,
// a host clock too far from the database's (no claim until they agree again), and an extension
// still running when the next half lease comes and when a handler's delayed retry settles.
import { ack, BrokerError, createBroker, retryAfter, type TableDescription } from "@rowclaim/core";
import type { LeaseClaimer } from "@rowclaim/core/driver";
import { drainTable } from "@rowclaim/core/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createManualClock } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";
import { deferred, replacingClaimerMethod, START, setUp } from "./memory-setup.js";

const lease = (name: string): TableDescription => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
  lease: 30,
});

afterEach(() => {
  vi.useRealTimers();
});

describe("a lease broker without a clock option", () => {
  it("claims and settles on the machine's clock", async () => {
    const t = setUp(lease("machine_clock"));
    const broker = createBroker({ driver: t.driver, clockSkew: false });
    await broker.publish(t.table, "one");
    const subscription = await broker.subscribe(t.table, () => ack());
    await drainTable(broker, t.table);
    await broker.close();
    expect(subscription.stats.acked).toBe(1);
    expect(t.rows()).toEqual([]);
  });
});

describe("a lease host whose clock is too far from the database's", () => {
  it("claims nothing until the clocks agree again, then claims", async () => {
    const t = setUp(lease("skewed"));
    const host = createManualClock(START);
    // Measured again before a claim once a millisecond passed.
    const broker = t.broker({ clock: host.asFunction, clockSkew: { intervalMs: 1 } });
    const subscription = await broker.subscribe(t.table, () => ack(), { pollInterval: 10 });
    // The host an hour ahead of the database: far past a quarter of the 30 s lease.
    host.set(START.getTime() + 3_600_000);
    await waitFor("the refusal logged", () => t.logged.some((entry) => entry.level === "error"));
    await broker.publish(t.table, "one");
    // Two more readings of the database's clock, each refusing the claim it came before.
    const readings = t.count("databaseTime");
    await waitFor("two more clock readings", () => t.count("databaseTime") >= readings + 2);
    expect(subscription.stats.claimed).toBe(0);
    host.set(START);
    await waitFor("the row acked", () => subscription.stats.acked === 1);
    await broker.close();
    expect(t.logged.some((entry) => entry.message.includes("agrees with the database's again"))).toBe(true);
  });
});

describe("a lease extension still running", () => {
  it("when the next half lease comes is not run twice; a delayed retry settles once it ended", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const t = setUp(lease("extension_running"));
    const extending = deferred();
    let extensions = 0;
    const driver = replacingClaimerMethod<LeaseClaimer>(t.driver, "extend", (claimer) => {
      return async (...args: Parameters<LeaseClaimer["extend"]>) => {
        extensions += 1;
        await extending.promise;
        return claimer.extend(...args);
      };
    });
    const broker = t.broker({}, driver);
    await broker.publish(t.table, "long");
    const handler = deferred();
    const subscription = await broker.subscribe(t.table, async () => {
      await handler.promise;
      return retryAfter(60_000);
    });
    await waitFor("the row in work", () => subscription.inWork === 1);
    vi.advanceTimersByTime(15_000);
    await waitFor("the extension running", () => extensions === 1);
    // The next half lease while the first extension still runs: no second one.
    vi.advanceTimersByTime(15_000);
    expect(extensions).toBe(1);
    // The retry waits for the extension that includes its row.
    handler.resolve();
    extending.resolve();
    await waitFor("the retry counted", () => subscription.stats.retried === 1);
    await broker.close();
    // The extension, then the retry's own move of the lease (an extend call too).
    expect(extensions).toBe(2);
    expect(t.rows()[0]?.locked_until).toEqual(new Date(START.getTime() + 60_000));
  });
});

describe("a lease ack sent alone whose settle fails with another error than LEASE_LOST", () => {
  it("is counted as a settle error and the row stays, claimable once its lease runs out", async () => {
    const t = setUp(lease("settle_failed"), { without: ["settleMany", "claimWithAcks"] });
    let failures = 1;
    const driver = replacingClaimerMethod<LeaseClaimer>(t.driver, "settle", (claimer) => {
      return (...args: Parameters<LeaseClaimer["settle"]>) => {
        if (failures-- > 0) return Promise.reject(new BrokerError("CONNECTION_LOST", "the settle failed"));
        return claimer.settle(...args);
      };
    });
    const broker = t.broker({}, driver);
    await broker.publish(t.table, "one");
    const subscription = await broker.subscribe(t.table, () => ack(), { pollInterval: 10 });
    await waitFor("the settle error counted", () => subscription.stats.settleErrors === 1);
    expect(t.rows()).toHaveLength(1);
    t.clock.advance(31_000);
    await waitFor("the row acked", () => subscription.stats.acked === 1);
    await broker.close();
    expect(t.rows()).toEqual([]);
  });
});

describe("lease acks on a driver that carries acks with a claim but has no settleMany", () => {
  it("that go alone go one settle each; every row is acked", async () => {
    const t = setUp(lease("carry_no_many"), { without: ["settleMany"] });
    const broker = t.broker();
    await broker.publishMany(
      t.table,
      Array.from({ length: 8 }, (_, index) => ({ payload: index })),
    );
    const gate = deferred();
    const subscription = await broker.subscribe(
      t.table,
      async () => {
        await gate.promise;
        return ack();
      },
      { workers: 8 },
    );
    await waitFor("every row in work", () => subscription.inWork === 8);
    gate.resolve();
    await drainTable(broker, t.table);
    await broker.close();
    expect(subscription.stats).toMatchObject({ acked: 8, settleErrors: 0 });
    expect(t.count("settleMany")).toBe(0);
  });
});
