/**
 * Locking: a claim passes over rows in work elsewhere instead of waiting for them (also, in the
 * row lock and lease forms, a row another transaction holds locked), and a row in work never
 * blocks a publish (MySQL/MariaDB row lock claims run at READ COMMITTED, locking
 * the rows they take and not the gaps between them).
 *
 * @module
 */
import type { ClaimFormName } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { waitFor, within } from "./wait.js";

const SUITE = "locking";

/** The forms whose claims lock rows and skip rows locked elsewhere (`FOR UPDATE SKIP LOCKED`). */
const skipLockedForms: readonly ClaimFormName[] = ["rowLock", "lease"];

/** Registers the locking sub-suite. */
export function lockingSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("locking", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a claim passes over a row in work elsewhere and takes the next one at once`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 30 });
          const holder = await fx.broker();
          const other = await fx.broker();
          const release = fx.gate();
          const held: Seen<number>[] = [];
          await holder.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
          await holder.subscribe<number>(
            table,
            async (delivery) => {
              see(held, delivery);
              await release.opened;
            },
            { workers: 1, batch: 1, pollInterval: 20 },
          );
          await waitFor("the first row to be in work", () => held.length > 0);
          const seen: Seen<number>[] = [];
          await other.subscribe<number>(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
          // While the first row is held, the other broker takes the second at once rather than waiting.
          await waitFor(
            "the other broker to take the second row while the first is held",
            () => seen.length > 0,
          );
          expect(release.isOpen).toBe(false);
          expect(seen.map((s) => s.payload)).toEqual([2]);
          expect(held.map((s) => s.payload)).toEqual([1]);
          release.open();
          await waitFor("both rows to be acked", async () => (await fx.rows(table)).length === 0);
          expect(seen.map((s) => s.payload)).toEqual([2]);
        },
      );

      if (skipLockedForms.includes(form)) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] a claim passes over a row another transaction holds locked and takes the others while the lock is held (SKIP LOCKED)`,
          async (fx) => {
            await fx.requireForm(form);
            const hold = harness.holdRowLock?.bind(harness);
            if (hold === undefined) {
              return fx.skip(
                `the ${harness.name} harness gives no holdRowLock(), so no test can hold a row locked in a transaction of its own`,
              );
            }
            const table = await fx.table(form, { lease: 30 });
            const broker = await fx.broker();
            const [first, ...others] = await broker.publishMany(
              table,
              [1, 2, 3].map((n) => ({ payload: n })),
            );
            // The first row in claim order is locked by another transaction (a user's, say): a
            // claim must skip it, not wait for it.
            let held = true;
            const lock = await hold(table, first ?? 0);
            const unlock = async (): Promise<void> => {
              if (!held) return;
              held = false;
              await lock.release();
            };
            fx.releaseFirst(unlock);
            const seen: Seen<number>[] = [];
            await broker.subscribe<number>(table, (delivery) => void see(seen, delivery), {
              workers: 2,
              pollInterval: 20,
            });
            await waitFor(
              "the rows nobody holds to be delivered while the first row is still locked (a claim without SKIP LOCKED waits for the lock instead)",
              () => seen.length >= others.length,
              { timeoutMs: 15_000 },
            );
            expect(held, "the lock was released before the other rows were delivered").toBe(true);
            expect(seen.map((s) => s.id).sort()).toEqual(others.map(String).sort());
            await unlock();
            await waitFor("the first row to be delivered once unlocked", () => seen.length > others.length);
            await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
            expect(seen.map((s) => s.id)).toContain(String(first));
          },
        );
      }

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a publish does not wait for rows in work, not even a row that sorts before them (a claim locks its rows, not the gaps between them)`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 30 });
          const holder = await fx.broker();
          const publisher = await fx.broker();
          const release = fx.gate();
          const held: Seen[] = [];
          await holder.publishMany(table, [
            { payload: 1, priority: 5 },
            { payload: 2, priority: 5 },
          ]);
          await holder.subscribe(
            table,
            async (delivery) => {
              see(held, delivery);
              await release.opened;
            },
            { workers: 2, batch: 2, pollInterval: 20 },
          );
          await waitFor("both rows to be in work", () => held.length >= 2);
          // The table names no isolation. The new row's place in the claim-order index is the gap
          // before the rows in work: a row lock claim at REPEATABLE READ (MySQL/MariaDB's server
          // default) holds that gap locked, and the insert would wait for the batch to commit.
          await within(
            "a publish into the gap before the rows in work",
            publisher.publish(table, 3, { priority: 0 }),
            10_000,
          );
          await within(
            "a second publish while rows are in work",
            publisher.publishMany(table, [{ payload: 4 }]),
            10_000,
          );
          expect(release.isOpen).toBe(false);
          release.open();
          await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
        },
      );
    }
  });
}
