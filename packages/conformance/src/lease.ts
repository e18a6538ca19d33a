/**
 * The lease form: the claim counts the attempt and commits at once, extension keeps a long
 * handler's row, and a settlement whose lease was taken over fails with LEASE_LOST.
 *
 * @module
 */
import { ack, BrokerError, type Delivery } from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames } from "./tables.js";
import { isNull, toNumber } from "./values.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "lease";

/** Registers the lease sub-suite (skipped where the driver does not offer the lease form). */
export function leaseSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("lease", () => {
    conformanceTest(
      harness,
      SUITE,
      "[lease] a lease claim counts the attempt and commits at once",
      async (fx) => {
        await fx.requireForm("lease");
        const table = await fx.table("lease", { lease: 5 });
        const broker = await fx.broker();
        const release = fx.gate();
        const seen: Seen[] = [];
        await broker.subscribe(
          table,
          async (delivery) => {
            see(seen, delivery);
            await release.opened;
            return ack();
          },
          { pollInterval: 50 },
        );
        await broker.publish(table, "held");
        await waitFor("the handler to start", () => seen.length > 0);
        // The handler is still running: a second connection already sees the claim committed.
        const [row] = await fx.rows(table);
        expect(toNumber(row?.[columnNames.attempt])).toBe(2);
        expect(isNull(row?.[columnNames.lockedUntil])).toBe(false);
        expect(seen[0]?.attempt).toBe(1);
        release.open();
        await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] a handler running longer than two leases keeps its row",
      async (fx) => {
        await fx.requireForm("lease");
        // A 2 s lease, extended each second: a loaded machine may be late by most of a second
        // without the lease running out, and the handler still outlives two leases.
        const table = await fx.table("lease", { lease: 2 });
        const holder = await fx.broker();
        const seen: Seen[] = [];
        let settled: { readonly error: unknown } | undefined;
        let abortedWhileRunning = false;
        await holder.subscribe(
          table,
          async (delivery) => {
            see(seen, delivery);
            // The handler's work: two and a half leases.
            const until = Date.now() + 5000;
            while (Date.now() < until) {
              await pause(100);
              if (delivery.signal.aborted) abortedWhileRunning = true;
            }
            try {
              await delivery.settle(ack());
              settled = { error: undefined };
            } catch (error) {
              settled = { error };
            }
          },
          { pollInterval: 50 },
        );
        await holder.publish(table, "long");
        await waitFor("the holder's handler to start", () => seen.length > 0);
        // A rival subscription on another broker polls all along: it must never get the row.
        const rival = await fx.broker();
        const rivalSeen: Seen[] = [];
        await rival.subscribe(table, (delivery) => void see(rivalSeen, delivery), { pollInterval: 50 });
        await waitFor("the holder's settlement", () => settled !== undefined);
        expect(settled?.error).toBeUndefined();
        expect(abortedWhileRunning).toBe(false);
        expect(rivalSeen).toEqual([]);
        expect(seen).toHaveLength(1);
        expect(await fx.rows(table)).toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] a settlement whose lease was taken over fails with LEASE_LOST and changes nothing, while the new holder's settlement succeeds",
      async (fx) => {
        await fx.requireForm("lease");
        const table = await fx.table("lease", { lease: 1 });
        const first = await fx.broker();
        const second = await fx.broker();
        let firstDelivery: Delivery | undefined;
        const firstHeld = fx.gate();
        await first.subscribe(
          table,
          async (delivery) => {
            firstDelivery = delivery;
            await firstHeld.opened;
          },
          { pollInterval: 50, extendLeases: false },
        );
        await first.publish(table, "contested");
        await waitFor("the first subscription to claim the row", () => firstDelivery !== undefined);
        let secondDelivery: Delivery | undefined;
        const secondHeld = fx.gate();
        await second.subscribe(
          table,
          async (delivery) => {
            secondDelivery = delivery;
            await secondHeld.opened;
          },
          { pollInterval: 50 },
        );
        // The first lease runs out (it is not extended) and the second subscription claims the row.
        await waitFor(
          "the second subscription to claim the row after the first lease ran out",
          () => secondDelivery !== undefined,
        );
        expect(firstDelivery?.attempt).toBe(1);
        expect(secondDelivery?.attempt).toBe(2);

        const lost = await firstDelivery?.settle(ack()).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(
          BrokerError.is(lost, "LEASE_LOST"),
          `the first settlement should fail with LEASE_LOST, got ${String(lost)}`,
        ).toBe(true);
        const [row] = await fx.rows(table);
        expect(row, "the first settlement (an ack) must not delete the row").toBeDefined();
        expect(toNumber(row?.[columnNames.attempt])).toBe(3);
        expect(isNull(row?.[columnNames.lockedUntil])).toBe(false);

        await secondDelivery?.settle(ack());
        expect(await fx.rows(table)).toEqual([]);
        firstHeld.open();
        secondHeld.open();
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] a delivery whose row was taken away sees its signal abort with LEASE_LOST at the next extension",
      async (fx) => {
        await fx.requireForm("lease");
        const table = await fx.table("lease", { lease: 1 });
        const broker = await fx.broker();
        const release = fx.gate();
        let held: Delivery | undefined;
        await broker.subscribe(
          table,
          async (delivery) => {
            held = delivery;
            await release.opened;
          },
          { pollInterval: 50 },
        );
        await broker.publish(table, "taken away");
        await waitFor("the handler to start", () => held !== undefined);
        // Another party deletes the row (plain SQL: the suite's table names need no quoting).
        await harness.execute(`DELETE FROM ${table.name}`);
        await waitFor("the delivery's signal to abort", () => held?.signal.aborted === true, {
          timeoutMs: 10_000,
        });
        expect(
          BrokerError.is(held?.signal.reason, "LEASE_LOST"),
          `the abort reason: ${String(held?.signal.reason)}`,
        ).toBe(true);
        expectCode(await caught(() => held?.settle(ack())), "LEASE_LOST");
        release.open();
      },
    );

    for (const extendLeases of [true, false]) {
      conformanceTest(
        harness,
        SUITE,
        `[lease] extension ${extendLeases ? "on" : "off"}: a process frozen past the lease acks its rows by their first delivery; its own next claim does not run them again`,
        async (fx) => {
          await fx.requireForm("lease");
          const table = await fx.table("lease", { lease: 1 });
          const broker = await fx.broker();
          const count = 20;
          const release = fx.gate();
          const seen: Seen[] = [];
          const subscription = await broker.subscribe(
            table,
            async (delivery) => {
              see(seen, delivery);
              await release.opened;
              return ack();
            },
            { workers: count, batch: count, pollInterval: 20, extendLeases },
          );
          await broker.publishMany(
            table,
            Array.from({ length: count }, (_, n) => ({ payload: n })),
          );
          await waitFor(`${count} handlers in work`, () => seen.length >= count);
          // The process freezes past the lease (nothing of it runs), and its handlers all finish as it resumes.
          release.open();
          freeze(2_500);
          await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
          expect(seen.map((s) => s.id).sort()).toEqual([...new Set(seen.map((s) => s.id))].sort());
          expect(seen).toHaveLength(count);
          await waitFor("every ack counted", () => subscription.stats.acked >= count);
          expect(subscription.stats.settleErrors).toBe(0);
        },
      );
    }
  });
}

/** Blocks this process (its event loop: no timer, no I/O callback runs) for `ms` milliseconds. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
