// Core's row lock runtime on the in-memory reference driver: how a batch ends when the
// claimer's batch end, commit or rollback fails, each failure planted in one claimer method.
import { ack, BrokerError, retry } from "@rowclaim/core";
import { drainTable } from "@rowclaim/core/testing";
import { describe, expect, it } from "vitest";
import type { MemoryRowLockClaimer } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";
import { replacingClaimerMethod, setUp } from "./memory-setup.js";

const table = (name: string) => ({ name, columns: { id: "id", payload: "payload", attempt: "attempt" } });
type Claimer = MemoryRowLockClaimer;

describe("a row lock batch whose end carries the next claim (endBatchWithClaim)", () => {
  it("whose claim part failed: the runtime claims again on its own, and every row is acked", async () => {
    const t = setUp(table("carry_claim_failed"));
    let failures = 1;
    const driver = replacingClaimerMethod<Claimer>(t.driver, "endBatchWithClaim", (claimer) => {
      return async (...args: Parameters<Claimer["endBatchWithClaim"]>) => {
        const result = await claimer.endBatchWithClaim(...args);
        if (failures-- <= 0) return result;
        // The claim's transaction is given up, and reported as the claim's error.
        if (result.claimed !== null && !("error" in result.claimed))
          await claimer.release(result.claimed.token);
        return {
          ended: result.ended,
          claimed: { error: new BrokerError("CONNECTION_LOST", "the claim failed") },
        };
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

  it("that throws (against the contract): nothing of the batch is known committed, its delivery fails, and the row is claimed again", async () => {
    const t = setUp(table("carry_threw"));
    let failures = 1;
    const driver = replacingClaimerMethod<Claimer>(t.driver, "endBatchWithClaim", (claimer) => {
      return async (...args: Parameters<Claimer["endBatchWithClaim"]>) => {
        if (failures-- <= 0) return claimer.endBatchWithClaim(...args);
        await claimer.release(args[0]);
        throw new BrokerError("CONNECTION_LOST", "the batch's end failed");
      };
    });
    const broker = t.broker({}, driver);
    await broker.publishMany(t.table, [{ payload: 1 }, { payload: 2 }]);
    const subscription = await broker.subscribe(t.table, () => ack(), { workers: 1 });
    await drainTable(broker, t.table);
    await broker.close();
    // The planted failure happened.
    expect(failures).toBeLessThanOrEqual(0);
    expect(subscription.stats.settleErrors).toBe(1);
    expect(t.rows()).toEqual([]);
  });
});

describe("a row lock batch without acks", () => {
  it("whose commit fails is logged, and its rows are due again", async () => {
    const t = setUp(table("commit_failed"), { without: ["endBatchWithClaim"] });
    let failures = 1;
    const driver = replacingClaimerMethod<Claimer>(t.driver, "endBatch", (claimer) => {
      return async (...args: Parameters<Claimer["endBatch"]>) => {
        if (args[1] !== undefined || failures-- <= 0) return claimer.endBatch(...args);
        await claimer.release(args[0]);
        throw new BrokerError("CONNECTION_LOST", "the commit failed");
      };
    });
    const broker = t.broker({}, driver);
    await broker.publish(t.table, "retried once");
    let runs = 0;
    await broker.subscribe(t.table, () => (runs++ === 0 ? retry() : ack()), { pollInterval: 20 });
    await drainTable(broker, t.table);
    await broker.close();
    expect(
      t.logged.filter((entry) => entry.message.includes("committing a row lock batch failed")),
    ).toHaveLength(1);
    expect(runs).toBe(2);
  });
});

describe("a row lock batch rolled back after a settlement failed", () => {
  it("logs a rollback that fails, and fails the settlement with its own error", async () => {
    const t = setUp(table("rollback_failed"), { without: ["endBatchWithClaim"] });
    let failures = 1;
    const withSettle = replacingClaimerMethod<Claimer>(t.driver, "settle", (claimer) => {
      return async (...args: Parameters<Claimer["settle"]>) => {
        if (failures-- > 0) throw new BrokerError("CONNECTION_LOST", "the settlement failed");
        return claimer.settle(...args);
      };
    });
    const driver = replacingClaimerMethod<Claimer>(withSettle, "release", (claimer) => {
      return async (...args: Parameters<Claimer["release"]>) => {
        await claimer.release(...args);
        throw new BrokerError("CONNECTION_LOST", "the rollback failed");
      };
    });
    const broker = t.broker({}, driver);
    await broker.publish(t.table, "job");
    const subscription = await broker.subscribe(t.table, () => retry(), { pollInterval: 20 });
    await waitFor("the failed settlement counted", () => subscription.stats.settleErrors === 1);
    await waitFor("the failed rollback logged", () =>
      t.logged.some((entry) => entry.message.includes("rolling back a row lock batch failed")),
    );
    await broker.close();
  });
});
