// Core's advisory lock runtime on the in-memory reference driver: acks carried with the next
// claim (claimWithAcks) or sent alone, counted from the driver's calls.
import { ack, BrokerError, type TableDescription } from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { describe, expect, it } from "vitest";
import type { MemoryAdvisoryClaimer, MemoryOptionalMethod } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";
import { replacingClaimerMethod, setUp } from "./memory-setup.js";

const advisory = (name: string): TableDescription => ({
  name,
  columns: { id: "id", payload: "payload", attempt: "attempt" },
  advisoryLock: "{id}",
});
type Claimer = MemoryAdvisoryClaimer;

describe("advisory acks on a driver without claimWithAcks", () => {
  it("go one settle() each", async () => {
    const t = setUp(advisory("alone"), { without: ["claimWithAcks"] });
    const broker = t.broker();
    await broker.publishMany(t.table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await broker.subscribe(t.table, () => ack(), { workers: 2 });
    await drainTable(broker, t.table);
    await broker.close();
    expect({ settle: t.count("settle"), claimWithAcks: t.count("claimWithAcks") }).toEqual({
      settle: 3,
      claimWithAcks: 0,
    });
  });
});

describe.each<{ readonly without: readonly MemoryOptionalMethod[] }>([
  { without: [] },
  { without: ["claimWithAcks"] },
])(
  "an advisory ack whose row was deleted behind the broker's back while its key was held (driver without $without)",
  ({ without }) => {
    it("fails with LEASE_LOST and changes nothing; the other rows are acked", async () => {
      const t = setUp(advisory(`gone_${without.length}`), { without });
      const broker = t.broker();
      const lost: unknown[] = [];
      broker.on("leaseLost", ({ id }) => lost.push(id));
      await broker.publishMany(t.table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
      const subscription = await broker.subscribe(
        t.table,
        (delivery) => {
          if (delivery.id === 1) t.database.tableOf(t.table)?.rows.delete("1");
          return ack();
        },
        { workers: 1 },
      );
      await waitFor("every row gone", () => t.rows().length === 0 && subscription.stats.settleErrors === 1);
      await broker.close();
      expect(lost).toEqual([1]);
      expect(subscription.stats.acked).toBe(2);
    });
  },
);

describe("an advisory claim carrying acks that fails", () => {
  it("sends its acks alone and claims again, so that every row is acked", async () => {
    const t = setUp(advisory("carry_failed"));
    let failures = 1;
    const driver = replacingClaimerMethod<Claimer>(t.driver, "claimWithAcks", (claimer) => {
      return async (...args: Parameters<Claimer["claimWithAcks"]>) => {
        if (failures-- > 0) throw new BrokerError("CONNECTION_LOST", "the carrying claim failed");
        return claimer.claimWithAcks(...args);
      };
    });
    const broker = t.broker({}, driver);
    await broker.publishMany(t.table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const subscription = await broker.subscribe(t.table, () => ack(), { workers: 1 });
    await drainTable(broker, t.table);
    await broker.close();
    // The planted failure happened.
    expect(failures).toBeLessThanOrEqual(0);
    expect(subscription.stats).toMatchObject({ acked: 3, claimErrors: 0, settleErrors: 0 });
  });
});
