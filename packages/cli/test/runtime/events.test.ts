import {
  ack,
  BrokerError,
  type BrokerEventMap,
  type BrokerEventName,
  defineTable,
  drop,
  silentLogger,
} from "@rowclaim/core";
import { describe, expect, test } from "vitest";
import { uniquePrefix } from "../support.js";
import { leaseColumns, sqliteBroker, waitFor } from "./support.js";

/** Records every event of the names given. */
function record<Name extends BrokerEventName>(
  broker: {
    on: <N extends BrokerEventName>(name: N, listener: (event: BrokerEventMap[N]) => void) => () => void;
  },
  names: readonly Name[],
): { name: Name; event: BrokerEventMap[Name] }[] {
  const seen: { name: Name; event: BrokerEventMap[Name] }[] = [];
  for (const name of names) broker.on(name, (event) => seen.push({ name, event }));
  return seen;
}

describe("the broker's events", () => {
  test("a delivery emits claimed, then settled with its outcome and durations; a thrown handler emits failed", async () => {
    const name = uniquePrefix("events_flow");
    const jobs = defineTable({ name, columns: leaseColumns });
    const { broker } = sqliteBroker([jobs], { logger: silentLogger });
    try {
      const seen = record(broker, ["subscriptionStarted", "claimed", "settled", "failed"]);
      await broker.publish(jobs, "throws");
      await broker.publish(jobs, "drops");
      await broker.subscribe(
        jobs,
        (delivery) => {
          if (delivery.payload === "throws" && delivery.attempt === 1) throw new Error("first attempt fails");
          return delivery.payload === "drops" ? drop() : ack();
        },
        { pollInterval: 20, backoff: { baseMs: 1, maxMs: 1 } },
      );
      await waitFor("three settlements", () => seen.filter((entry) => entry.name === "settled").length === 3);
      expect(seen[0]?.name).toBe("subscriptionStarted");
      const settled = seen.flatMap((entry) =>
        entry.name === "settled" ? [entry.event as BrokerEventMap["settled"]] : [],
      );
      expect(settled.map((event) => event.outcome).sort()).toEqual(["ack", "drop", "retryAfter"]);
      for (const event of settled) {
        expect(event.table.name).toBe(name);
        expect(event.durationMs).toBeGreaterThanOrEqual(event.handlerMs);
      }
      const failed = seen.flatMap((entry) =>
        entry.name === "failed" ? [entry.event as BrokerEventMap["failed"]] : [],
      );
      expect(failed).toHaveLength(1);
      expect((failed[0]?.error as Error | undefined)?.message).toBe("first attempt fails");
      expect(failed[0]?.next).toBe("retry");
      expect(seen.filter((entry) => entry.name === "claimed")).toHaveLength(3);
    } finally {
      await broker.close();
    }
  });

  test("a lease settlement that finds another token emits leaseLost", async () => {
    const name = uniquePrefix("events_lease");
    const jobs = defineTable({ name, columns: leaseColumns });
    const { broker, driver } = sqliteBroker([jobs], { logger: silentLogger });
    try {
      const lost: BrokerEventMap["leaseLost"][] = [];
      broker.on("leaseLost", (event) => lost.push(event));
      const id = await broker.publish(jobs, 1);
      await broker.subscribe(
        jobs,
        () => {
          // Another claim takes the row: its lease (the token) is no longer this delivery's.
          driver.database.prepare(`UPDATE "${name}" SET locked_until = locked_until + 60000`).run();
          return ack();
        },
        { pollInterval: 20 },
      );
      await waitFor("leaseLost", () => lost.length === 1);
      expect(lost[0]?.id).toBe(id);
      expect(BrokerError.is(lost[0]?.error, "LEASE_LOST")).toBe(true);
    } finally {
      await broker.close();
    }
  });

  test("a failed claim emits claimError, and stopping emits subscriptionStopped", async () => {
    const name = uniquePrefix("events_claim");
    const jobs = defineTable({ name, columns: leaseColumns });
    const { broker, driver } = sqliteBroker([jobs], { logger: silentLogger });
    const seen = record(broker, ["claimError", "subscriptionStopped"]);
    const subscription = await broker.subscribe(jobs, () => ack(), { pollInterval: 20 });
    driver.database.exec(`DROP TABLE "${name}"`);
    await waitFor("claimError", () => seen.some((entry) => entry.name === "claimError"));
    await subscription.stop();
    expect(seen.at(-1)?.name).toBe("subscriptionStopped");
    expect((seen.at(-1)?.event as BrokerEventMap["subscriptionStopped"] | undefined)?.subscription).toBe(
      subscription,
    );
    await broker.close();
  });

  test("a listener that throws is logged and does not stop the delivery; off removes a listener", async () => {
    const name = uniquePrefix("events_throw");
    const jobs = defineTable({ name, columns: leaseColumns });
    const errors: string[] = [];
    const { broker } = sqliteBroker([jobs], {
      logger: { warn() {}, error: (message) => void errors.push(message) },
    });
    try {
      const removed = (): void => {
        throw new Error("never called");
      };
      broker.on("settled", removed);
      broker.off("settled", removed);
      broker.on("claimed", () => {
        throw new Error("listener bug");
      });
      let settled = 0;
      const remove = broker.on("settled", () => {
        settled += 1;
      });
      await broker.publish(jobs, 1);
      await broker.subscribe(jobs, () => ack(), { pollInterval: 20 });
      await waitFor("the settlement", () => settled === 1);
      remove();
      expect(errors).toEqual([expect.stringContaining('"claimed" event threw')]);
    } finally {
      await broker.close();
    }
  });
});
