/**
 * Batches: `batch: n` claims up to n rows at once; in the row lock form a batch is one
 * transaction, so a failing settlement rolls the whole batch back and the batch's later
 * settlements fail with BATCH_ROLLED_BACK.
 *
 * @module
 */
import { ack, BrokerError, type Delivery, deadLetter, retry } from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames, deadLetterDescription, describeTable } from "./tables.js";
import { toNumber } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "batch";

/** Registers the batch sub-suite. */
export function batchSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("batches", () => {
    for (const form of allForms) {
      conformanceTest(harness, SUITE, `[${form}] batch: n claims up to n rows and never more`, async (fx) => {
        await fx.requireForm(form);
        const table = await fx.table(form, { lease: 5 });
        const broker = await fx.broker();
        await broker.publishMany(
          table,
          Array.from({ length: 7 }, (_, n) => ({ payload: n })),
        );
        const release = fx.gate();
        const seen: Seen[] = [];
        let inWork = 0;
        let maxInWork = 0;
        const subscription = await broker.subscribe(
          table,
          async (delivery) => {
            inWork += 1;
            maxInWork = Math.max(maxInWork, inWork);
            see(seen, delivery);
            await release.opened;
            inWork -= 1;
            return ack();
          },
          { batch: 3, workers: 3, pollInterval: 20 },
        );
        await waitFor("a full batch in work", () => seen.length >= 3);
        expect(subscription.stats.claimed).toBe(3);
        expect(subscription.inWork).toBe(3);
        release.open();
        await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
        expect(maxInWork).toBeLessThanOrEqual(3);
        expect(new Set(seen.map((s) => s.id)).size).toBe(7);
      });
    }

    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] without batch, a claim takes ${form === "rowLock" ? "one row (a row lock batch shares a transaction)" : "up to workers rows"}`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 5 });
          const broker = await fx.broker();
          const subscription = await broker.subscribe(table, () => ack(), { workers: 4, pollInterval: 20 });
          expect(subscription.workers).toBe(4);
          expect(subscription.batch).toBe(form === "rowLock" ? 1 : 4);
          await broker.publishMany(
            table,
            Array.from({ length: 6 }, (_, n) => ({ payload: n })),
          );
          await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
          // The broker counts an ack once its settlement returned, a round trip after the row is
          // gone: wait for the count, never read it before the event that makes it.
          await waitFor("the subscription to count six acks", () => subscription.stats.acked >= 6);
          expect(subscription.stats.acked).toBe(6);
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "[rowLock] a failing settlement rolls the row lock batch back and the batch's later settlements fail with BATCH_ROLLED_BACK",
      async (fx) => {
        await fx.requireForm("rowLock");
        const name = fx.uniqueName();
        const description = describeTable("rowLock", name, {
          roles: ["attempt", "runAt"],
          maxAttempts: 5,
          deadLetter: { table: `${name}_dead` },
        });
        const dead = await fx.tableFrom(deadLetterDescription(description, `${name}_dead`));
        const table = await fx.tableFrom(description);
        const broker = await fx.broker();
        await broker.publishMany(
          table,
          [0, 1, 2].map((n) => ({ payload: n })),
        );
        const firstRound: Delivery<number>[] = [];
        const secondRound: Seen<number>[] = [];
        const handled = fx.gate();
        await broker.subscribe<number>(
          table,
          async (delivery) => {
            if (firstRound.length < 3 && !firstRound.some((d) => String(d.id) === String(delivery.id))) {
              firstRound.push(delivery);
              await handled.opened;
              return undefined;
            }
            see(secondRound, delivery);
            return ack();
          },
          {
            batch: 3,
            workers: 3,
            pollInterval: 20,
          },
        );
        await waitFor("the batch of three in work", () => firstRound.length === 3);
        const [failing, later, last] = firstRound;
        // The dead-letter table existed when the subscription opened; now it is gone, so the database
        // refuses the move: a real settlement failure.
        await harness.dropTable(dead);
        // Settlements of a batch run in the order they are made: an ack, the failing move, another ack.
        const laterSettled = caught(() => later?.settle(ack()));
        const failure = await caught(() => failing?.settle(deadLetter()));
        expect(failure, "moving a row to a missing table must fail").toBeDefined();
        expect(BrokerError.is(failure, "BATCH_ROLLED_BACK")).toBe(false);
        expectCode(await laterSettled, "BATCH_ROLLED_BACK");
        expectCode(await caught(() => last?.settle(ack())), "BATCH_ROLLED_BACK");
        handled.open();
        // The rollback undid the acks: those rows are acked on their next claim without their
        // handlers running again; the refused row is retried, its refused attempt counted.
        await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
        expect(secondRound.map((s) => [s.id, s.attempt])).toEqual([[String(failing?.id), 2]]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[rowLock] a row lock batch commits once every row of it settled",
      async (fx) => {
        await fx.requireForm("rowLock");
        const table = await fx.table("rowLock", { roles: ["attempt", "runAt"] });
        const broker = await fx.broker();
        await broker.publishMany(
          table,
          [0, 1].map((n) => ({ payload: n })),
        );
        const held: Delivery<number>[] = [];
        const release = fx.gate();
        await broker.subscribe<number>(
          table,
          async (delivery) => {
            held.push(delivery);
            await release.opened;
          },
          { batch: 2, workers: 2, pollInterval: 20 },
        );
        await waitFor("the batch of two in work", () => held.length === 2);
        const first = held.find((d) => d.payload === 0);
        const second = held.find((d) => d.payload === 1);
        // The first row's retry waits for the batch: until the second row settles, nothing is committed.
        const firstSettled = first?.settle(retry());
        const before = await fx.rows(table);
        expect(before.map((row) => toNumber(row[columnNames.attempt]))).toEqual([1, 1]);
        await second?.settle(ack());
        await firstSettled;
        const after = await fx.rows(table);
        expect(after).toHaveLength(1);
        expect(toNumber(after[0]?.[columnNames.attempt])).toBe(2);
        release.open();
      },
    );
  });
}
