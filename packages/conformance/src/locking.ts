/**
 * Locking: a claim passes over rows in work elsewhere instead of waiting for them, and a row
 * in work never blocks a publish (MySQL/MariaDB row lock claims run at READ COMMITTED, locking
 * the rows they take and not the gaps between them).
 *
 * @module
 */
import { describe, expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { waitFor, within } from "./wait.js";

const SUITE = "locking";

/** Registers the locking sub-suite. */
export function lockingSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  describe("locking", () => {
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

      conformanceTest(harness, SUITE, `[${form}] a publish does not wait for rows in work`, async (fx) => {
        await fx.requireForm(form);
        const table = await fx.table(form, { lease: 30 });
        const holder = await fx.broker();
        const publisher = await fx.broker();
        const release = fx.gate();
        const held: Seen[] = [];
        await holder.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
        await holder.subscribe(
          table,
          async (delivery) => {
            see(held, delivery);
            await release.opened;
          },
          { workers: 2, batch: 2, pollInterval: 20 },
        );
        await waitFor("both rows to be in work", () => held.length >= 2);
        await within("a publish while rows are in work", publisher.publish(table, 3), 10_000);
        await within(
          "a second publish while rows are in work",
          publisher.publishMany(table, [{ payload: 4 }]),
          10_000,
        );
        expect(release.isOpen).toBe(false);
        release.open();
        await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
      });
    }
  });
}
