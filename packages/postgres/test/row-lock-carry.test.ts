/**
 * A row lock batch's end carries the next claim (core's `endBatchWithClaim`), through a broker
 * on the real driver: a worker acking row after row settles every row once and in order, and a
 * carried claim that fails is made again on its own, no row lost or delivered twice. Which batch
 * ends carry a claim is core's to decide, tested without a database in core's `ack-carrier.test.ts`.
 */
import {
  createBroker,
  type Driver,
  type Subscription,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import type { Acks, BatchEnd, ClaimedRow, ClaimRequest } from "@rowclaim/core/driver";
import { countCalls, countingDriver } from "@rowclaim/tooling/claimer-calls";
import { describe, expect, it } from "vitest";
import type { PostgresRowLockClaimer, PostgresRowLockToken } from "../src/row-lock.js";
import { describeTable, publishRows, TestDb, uniqueName } from "./helpers.js";

const db = TestDb.forFile();

/**
 * Drains `table` (rows with payloads 0 to `count - 1`) with one worker through a broker on
 * `driver`, and checks every row was handled once, in order, and is gone. Resolves the
 * subscription's counters.
 */
async function drainOneByOne(
  table: TableDefinition,
  count: number,
  driver: Driver,
  pollInterval: number,
): Promise<Subscription["stats"]> {
  const broker = createBroker({ driver, logger: silentLogger });
  const handled: unknown[] = [];
  const subscription = await broker.subscribe(table, (delivery) => void handled.push(delivery.payload), {
    workers: 1,
    pollInterval,
  });
  await expect.poll(() => subscription.stats.acked, { timeout: 20_000 }).toBe(count);
  await broker.close();
  expect(await db.rows(table)).toEqual([]);
  expect(handled).toEqual(Array.from({ length: count }, (_, n) => n));
  return subscription.stats;
}

describe("a row lock subscription whose worker acks row after row", () => {
  it("settles every row once and in order, its batch ends carrying the next claims", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_carry")));
    const count = 40;
    const driver = db.driver();
    await publishRows(driver, table, count);
    const stats = await drainOneByOne(table, count, driver, 20);
    expect(stats.claimErrors).toBe(0);
  });

  it("claims again on its own when a carried claim fails, losing and repeating no row", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_carry")));
    const count = 20;
    const driver = db.driver();
    await publishRows(driver, table, count);
    const calls = new Map<string, number>();
    // Every third carried claim reports a failure after the database did the work: the claimed
    // batch is rolled back (its rows due again) and the broker must claim on its own.
    const failEveryThird = (claimer: PostgresRowLockClaimer): PostgresRowLockClaimer => {
      const counted = countCalls(claimer, calls);
      return new Proxy(counted, {
        get(target, property, receiver) {
          if (property !== "endBatchWithClaim") return Reflect.get(target, property, receiver);
          return async (
            token: PostgresRowLockToken,
            acks: Acks<ClaimedRow>,
            request: ClaimRequest,
          ): Promise<BatchEnd<PostgresRowLockToken>> => {
            const result = await target.endBatchWithClaim(token, acks, request);
            if (
              (calls.get("endBatchWithClaim") ?? 0) % 3 !== 0 ||
              result.claimed === null ||
              "error" in result.claimed
            )
              return result;
            await target.release(result.claimed.token);
            return {
              ended: result.ended,
              claimed: { error: new Error("injected: the carried claim failed") },
            };
          };
        },
      });
    };
    const failing = countingDriver(driver, calls, (claimer) =>
      claimer.form === "rowLock" ? failEveryThird(claimer as PostgresRowLockClaimer) : claimer,
    );
    // A one-minute poll: a failed carried claim that was not made again would stall the drain.
    const stats = await drainOneByOne(table, count, failing, 60_000);
    expect(stats.claimErrors).toBe(0);
  });
});
