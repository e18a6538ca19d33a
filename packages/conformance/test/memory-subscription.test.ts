// Core's subscription (claim loop, delivery, outcome → settlement) on the in-memory reference
// driver: what it reports, and what it settles without running the handler. Every test waits
// for the state it asserts.
import { ack, BrokerError, deadLetter, retryAfter, type TableDescription } from "@rowclaim/core";
import type { Claimer, LeaseClaimer } from "@rowclaim/core/driver";
import { drainTable } from "@rowclaim/core/testing";
import { describe, expect, it } from "vitest";
import { waitFor } from "../src/wait.js";
import { changeRows, deferred, replacingClaimerMethod, setUp } from "./memory-setup.js";

const lease = (name: string, more: Partial<TableDescription> = {}): TableDescription => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until", group: "grp" },
  lease: 30,
  ...more,
});

describe("a subscription's events and debug traces", () => {
  it("report its start, a failed claim, each claim, failure and settlement, and its stop", async () => {
    const t = setUp(lease("events"));
    let failures = 1;
    const driver = replacingClaimerMethod<Claimer>(t.driver, "claim", (claimer) => {
      return (...args: Parameters<LeaseClaimer["claim"]>) => {
        if (failures-- > 0) return Promise.reject(new BrokerError("CONNECTION_LOST", "the claim failed"));
        return (claimer as LeaseClaimer).claim(...args);
      };
    });
    const broker = t.broker({}, driver);
    const seen: string[] = [];
    for (const name of [
      "subscriptionStarted",
      "claimError",
      "claimed",
      "failed",
      "settled",
      "settleError",
      "subscriptionStopped",
    ] as const) {
      broker.on(name, () => seen.push(name));
    }
    await broker.publishMany(t.table, [{ payload: "throws" }, { payload: "acks" }]);
    const subscription = await broker.subscribe(
      t.table,
      (delivery) => {
        if (delivery.payload === "throws" && delivery.attempt === 1) throw new Error("the handler failed");
        return ack();
      },
      { pollInterval: 20, workers: 1, backoff: { baseMs: 0 } },
    );
    await waitFor("both rows acked", () => subscription.stats.acked === 2);
    await broker.close();
    expect(new Set(seen)).toEqual(
      new Set(["subscriptionStarted", "claimError", "claimed", "failed", "settled", "subscriptionStopped"]),
    );
    expect(
      t.logged.some((entry) => entry.level === "debug" && entry.message.includes("claimed 1 row(s)")),
    ).toBe(true);
    expect(
      t.logged.some((entry) => entry.level === "debug" && entry.message.includes("settled by ack")),
    ).toBe(true);
    expect(subscription.stats.claimErrors).toBe(1);
  });
});

describe("rows settled without running the handler", () => {
  it("a row past maxAttempts goes to the dead letter", async () => {
    const t = setUp(lease("past_max"));
    const broker = t.broker();
    await broker.publish(t.table, "tired");
    changeRows(t, () => ({ attempt: 5 }));
    let ran = 0;
    const subscription = await broker.subscribe(t.table, () => void ran++, {
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    });
    await waitFor("the row dead-lettered", () => subscription.stats.deadLettered === 1);
    await broker.close();
    expect(ran).toBe(0);
    expect(t.rows()[0]?.grp).toBe("dead");
  });

  it.each([
    [
      "fails the table's payloadSchema",
      (value: unknown) => ({ issues: [{ message: `not ${String(value)}` }] }),
    ],
    [
      "makes the payloadSchema throw",
      () => {
        throw new Error("the schema threw");
      },
    ],
  ])("a payload that %s goes to the dead letter", async (_what, failing) => {
    // The publish's check passes; the delivery's fails.
    let checks = 0;
    const validate = (value: unknown) => (checks++ === 0 ? { value } : failing(value));
    const schema = { "~standard": { version: 1 as const, vendor: "test", validate } };
    const t = setUp(lease(`schema_${_what.length}`, { payloadSchema: schema }));
    const broker = t.broker();
    const failed: unknown[] = [];
    broker.on("failed", ({ next }) => failed.push(next));
    await broker.publish(t.table, "bad");
    let ran = 0;
    const subscription = await broker.subscribe(t.table, () => void ran++, {
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    });
    await waitFor("the row dead-lettered", () => subscription.stats.deadLettered === 1);
    await broker.close();
    expect(ran).toBe(0);
    expect(failed).toEqual(["deadLetter"]);
  });
});

describe("outcomes the broker cannot apply", () => {
  it("a handler that returns something that is not an outcome fails its delivery (retried)", async () => {
    const t = setUp(lease("not_outcome"));
    const broker = t.broker();
    await broker.publish(t.table, "job");
    const subscription = await broker.subscribe(t.table, () => "done" as unknown as undefined, {
      backoff: { baseMs: 60_000 },
    });
    await waitFor("the failure counted", () => subscription.stats.failed === 1);
    await broker.close();
    expect(t.logged.some((entry) => String(entry.err).includes("which is not an outcome"))).toBe(true);
  });

  it("settle() twice: the second fails with INVALID_ARGUMENT, and a handler throwing after it settled is logged", async () => {
    const t = setUp(lease("twice"));
    const broker = t.broker();
    await broker.publish(t.table, "job");
    const codes: unknown[] = [];
    const subscription = await broker.subscribe(t.table, async (delivery) => {
      await delivery.settle(ack());
      await delivery.settle(ack()).catch((error: { code?: string }) => codes.push(error.code));
      throw new Error("after settling");
    });
    await waitFor("the throw logged", () =>
      t.logged.some((entry) => entry.message.includes("the handler threw after it settled")),
    );
    await broker.close();
    expect(codes).toEqual(["INVALID_ARGUMENT"]);
    expect(subscription.stats.acked).toBe(1);
  });

  it("deadLetter() without a target gives the row back and counts a settle error", async () => {
    const t = setUp(lease("no_target"));
    const broker = t.broker();
    await broker.publish(t.table, "job");
    const subscription = await broker.subscribe(t.table, () => deadLetter(), { pollInterval: 60_000 });
    await waitFor("the settle error counted", () => subscription.stats.settleErrors >= 1);
    await broker.close();
    expect(t.rows()[0]?.locked_until).toBeNull();
  });

  it("retryAfter() returned by a transaction body on a table without runAt retries at once, with one warning", async () => {
    const t = setUp(lease("body_retry"));
    const broker = t.broker();
    await broker.publish(t.table, "job");
    let runs = 0;
    const subscription = await broker.subscribe(t.table, async (delivery) => {
      runs += 1;
      if (runs > 2) return ack();
      await delivery.transaction(() => retryAfter(60_000));
      return undefined;
    });
    await drainTable(broker, t.table);
    await broker.close();
    expect(subscription.stats.retried).toBe(2);
    expect(t.logged.filter((entry) => entry.message.includes("has no runAt column"))).toHaveLength(1);
  });
});

describe("a handler past its timeout", () => {
  it("is counted and its row retried; a transaction body still running then is given up", async () => {
    const t = setUp(lease("timed_out"));
    const broker = t.broker();
    await broker.publishMany(t.table, [{ payload: "plain" }, { payload: "transacting" }]);
    const never = deferred();
    const subscription = await broker.subscribe(
      t.table,
      async (delivery) => {
        if (delivery.attempt > 1) return ack();
        if (delivery.payload === "plain") await never.promise;
        else await delivery.transaction(() => never.promise.then(() => ack()));
        return undefined;
      },
      { workers: 2, timeout: 1, timeoutGrace: 1, backoff: { baseMs: 0 }, pollInterval: 20 },
    );
    await waitFor("both timeouts counted", () => subscription.stats.timedOut === 2);
    await broker.close({ timeout: 100 });
    expect(subscription.stats.failed).toBe(2);
  });
});

describe("idle() and stop()", () => {
  it("an idle() waiting when the subscription stops resolves, and idle() after it resolves at once", async () => {
    const t = setUp(lease("idle"));
    const broker = t.broker();
    await broker.publish(t.table, "held");
    const gate = deferred();
    const subscription = await broker.subscribe(t.table, async () => {
      await gate.promise;
      return ack();
    });
    await waitFor("the row in work", () => subscription.inWork === 1);
    const waiting = subscription.idle();
    const closing = broker.close({ timeout: 100 });
    await waiting;
    await closing;
    await subscription.idle();
    gate.resolve();
  });
});
