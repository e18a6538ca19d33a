/**
 * Shutdown: `close()` stops claiming, waits for deliveries in work, releases every key and
 * lock (also on a pool the user owns, which stays open: every connection back in it, no key
 * held); a delivery given up at the close timeout settles with CLOSED and changes nothing.
 *
 * @module
 */
import { ack, type Delivery } from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames } from "./tables.js";
import { isNull, toNumber } from "./values.js";
import { pause, waitFor, within } from "./wait.js";

const SUITE = "shutdown";

/** Registers the shutdown sub-suite. */
export function shutdownSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("shutdown", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] close() waits for deliveries in work and releases every key`,
        async (fx) => {
          await fx.requireForm(form);
          // Every row shares one advisory key (advisory form), so a key left locked would stop the next broker.
          const table = await fx.table(form, { keyColumn: "account", extraColumns: ["account"], lease: 5 });
          const broker = await fx.broker();
          await broker.publishMany(table, [
            { payload: 1, values: { account: "one" } },
            { payload: 2, values: { account: "one" } },
          ]);
          let started = false;
          let settledAt = 0;
          await broker.subscribe(
            table,
            async () => {
              started = true;
              await pause(400);
              settledAt = Date.now();
              return ack();
            },
            { pollInterval: 20 },
          );
          await waitFor("the first handler to start", () => started);
          await within("close() to return", broker.close());
          const closedAt = Date.now();
          expect(settledAt, "close() returned before the delivery in work finished").toBeGreaterThan(0);
          expect(settledAt).toBeLessThanOrEqual(closedAt);
          const rows = await fx.rows(table);
          expect(
            rows.length,
            "the delivery in work did not settle before close() returned",
          ).toBeLessThanOrEqual(1);
          // A new broker takes what is left at once: nothing of the closed broker still holds a key or a lock.
          const next = await fx.broker();
          const seen: Seen[] = [];
          await next.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
          await waitFor(
            "every row to be acked by the next broker",
            async () => (await fx.rows(table)).length === 0,
          );
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] on a pool the user owns, close() gives a delivery in work up, returns every connection to the pool and leaves no key held`,
        async (fx) => {
          await fx.requireForm(form);
          fx.requireUserPools();
          const table = await fx.table(form, { keyColumn: "account", extraColumns: ["account"], lease: 1 });
          const { broker, pool } = await fx.userPoolBroker();
          const held = fx.gate();
          let started = false;
          await broker.subscribe(
            table,
            async () => {
              started = true;
              await held.opened;
            },
            { pollInterval: 20 },
          );
          await broker.publish(table, "given up", { values: { account: "one" } });
          await waitFor("the handler to start", () => started);
          await within("close() to return", broker.close({ timeout: 100 }));
          // The pool is the user's: it stays open, and whatever the driver left in it is still there.
          expect(
            await pool.checkedOut(),
            "connections the closed driver never returned to the user's pool",
          ).toBe(0);
          const key = `${table.name}-one`;
          if (form === "advisory" && harness.advisoryKeyHeld !== undefined) {
            expect(
              await harness.advisoryKeyHeld(key),
              `the advisory key "${key}" is still held after close() gave its delivery up`,
            ).toBe(false);
          }
          // A broker on another pool takes the row (at once; a lease row after its lease).
          const next = await fx.userPoolBroker();
          const seen: Seen[] = [];
          await next.broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
          await waitFor(
            "a broker on another pool to take the given-up row (a key or lock left held in the user's pool stops it)",
            () => seen.length > 0,
          );
          await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
          held.open();
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a settlement after close() gave the delivery up fails with CLOSED and changes nothing`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 1 });
          const broker = await fx.broker();
          const closed = fx.gate();
          let held: Delivery | undefined;
          await broker.subscribe(
            table,
            async (delivery) => {
              held = delivery;
              await closed.opened;
            },
            { pollInterval: 20 },
          );
          await broker.publish(table, "given up");
          await waitFor("the handler to start", () => held !== undefined);
          await broker.close({ timeout: 100 });
          expect(held?.signal.aborted, "the delivery's signal did not abort when close() gave it up").toBe(
            true,
          );
          expectCode(await caught(() => held?.settle(ack())), "CLOSED");
          closed.open();
          const [row] = await fx.rows(table);
          expect(row, "the settlement after close() deleted the row").toBeDefined();
          // Row lock: rolled back, no attempt spent; lease and advisory: the claim's count stays.
          expect(toNumber(row?.[columnNames.attempt])).toBe(form === "rowLock" ? 1 : 2);
          if (form === "lease") expect(isNull(row?.[columnNames.lockedUntil])).toBe(false);
          // The row comes back: at once (row lock, advisory), after the lease (lease).
          const next = await fx.broker();
          const seen: Seen[] = [];
          await next.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
          await waitFor("the row to be delivered again", () => seen.length > 0);
          expect(seen[0]?.attempt).toBe(form === "rowLock" ? 1 : 2);
        },
      );
    }
  });
}
