/**
 * Claims: the first delivery reads attempt 1, claim order, and due times.
 *
 * @module
 */
import { ack, retryAfter } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames } from "./tables.js";
import { isNull } from "./values.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "claims";

/** Registers the claims sub-suite: first attempt, claim order, due times, in every form the driver offers. */
export function claimsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("claims", () => {
    for (const form of allForms) {
      conformanceTest(harness, SUITE, `[${form}] the first delivery reads attempt 1`, async (fx) => {
        await fx.requireForm(form);
        const table = await fx.table(form);
        const broker = await fx.broker();
        const seen: Seen[] = [];
        await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 50 });
        await broker.publish(table, { first: true });
        await waitFor("the delivery", () => seen.length > 0);
        expect(seen.map((s) => s.attempt)).toEqual([1]);
        expect(seen[0]?.payload).toEqual({ first: true });
      });

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a table without an attempt column reports attempt 1`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: [] });
          const broker = await fx.broker();
          const seen: Seen[] = [];
          let first = true;
          await broker.subscribe(
            table,
            (delivery) => {
              see(seen, delivery);
              if (first) {
                first = false;
                return retryAfter(0);
              }
              return ack();
            },
            { pollInterval: 50 },
          );
          await broker.publish(table, "x");
          await waitFor("two deliveries", () => seen.length >= 2);
          expect(seen.map((s) => s.attempt)).toEqual([1, 1]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] claim order is priority, then runAt, then id`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "priority"] });
          const broker = await fx.broker();
          const t = Date.now() - 60_000;
          // Published in this order (ids ascending); expected claim order: e, c, d, b, a.
          await broker.publishMany(table, [
            { payload: "a", priority: 2, runAt: new Date(t - 3000) },
            { payload: "b", priority: 1, runAt: new Date(t - 1000) },
            { payload: "c", priority: 1, runAt: new Date(t - 2000) },
            { payload: "d", priority: 1, runAt: new Date(t - 2000) },
            { payload: "e", priority: 0, runAt: new Date(t - 1000) },
          ]);
          const seen: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(seen, delivery), {
            pollInterval: 50,
            workers: 1,
            batch: 1,
          });
          await waitFor("five deliveries", () => seen.length >= 5);
          expect(seen.map((s) => s.payload)).toEqual(["e", "c", "d", "b", "a"]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a subscription claims only its own group, and null only rows without a group`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "group"] });
          const broker = await fx.broker();
          const ids = await broker.publishMany(table, [
            { payload: "a1", group: "a" },
            { payload: "none" },
            { payload: "b1", group: "b" },
            { payload: "a2", group: "a" },
          ]);
          const inGroup: Seen[] = [];
          const withoutGroup: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(inGroup, delivery), {
            group: "a",
            pollInterval: 20,
          });
          await broker.subscribe(table, (delivery) => void see(withoutGroup, delivery), { pollInterval: 20 });
          await waitFor(
            "group a's rows and the row without a group to be acked",
            async () => (await fx.rows(table)).length === 1,
          );
          expect(inGroup.map((s) => s.payload).sort()).toEqual(["a1", "a2"]);
          expect(inGroup.map((s) => s.group)).toEqual(["a", "a"]);
          expect(withoutGroup.map((s) => s.payload)).toEqual(["none"]);
          expect(withoutGroup[0]?.group).toBeNull();
          const [left] = await fx.rows(table);
          expect(String(left?.[columnNames.id])).toBe(String(ids[2]));
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] workers: n runs n handlers at once and no more`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 5 });
          const broker = await fx.broker();
          await broker.publishMany(
            table,
            Array.from({ length: 6 }, (_, n) => ({ payload: n })),
          );
          let inWork = 0;
          let maxInWork = 0;
          let done = 0;
          await broker.subscribe(
            table,
            async () => {
              inWork += 1;
              maxInWork = Math.max(maxInWork, inWork);
              // Each handler works until three are in work at once (or gives up after a while: a
              // loaded machine may take seconds to make three claims).
              const until = Date.now() + 10_000;
              while (maxInWork < 3 && Date.now() < until) await pause(10);
              inWork -= 1;
              done += 1;
            },
            { workers: 3, pollInterval: 20 },
          );
          await waitFor("all six rows to be handled", () => done >= 6);
          expect(maxInWork).toBe(3);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a row published with a future runAt is not claimed before it is due`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form);
          const broker = await fx.broker();
          const seen: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 50 });
          const due = new Date(Date.now() + 1500);
          await broker.publish(table, "later", { runAt: due });
          const [row] = await fx.rows(table);
          expect(isNull(row?.[columnNames.runAt])).toBe(false);
          await waitFor("the delivery once due", () => seen.length > 0);
          expect(seen[0]?.at).toBeGreaterThanOrEqual(due.getTime());
        },
      );
    }
  });
}
