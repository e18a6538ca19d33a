/**
 * FIFO groups: a claim takes only the head of its group and nothing while a row of it is in
 * work, across workers and brokers; `retry()` keeps the head; `retryAfter` moves it behind rows
 * due earlier.
 *
 * @module
 */
import { type Broker, retry, retryAfter } from "@rowclaim/core";
import { expect } from "vitest";
import { isClosed, isFinished, isReady, isStarted } from "./child-process.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames, fifoForms } from "./tables.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "fifo";

/** Registers the FIFO sub-suite (each test skipped where the driver does not guard FIFO groups in its form). */
export function fifoSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("FIFO groups", () => {
    for (const form of fifoForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] FIFO order holds with several workers on two brokers`,
        async (fx) => {
          await fx.requireFifo(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "group"], fifo: true, lease: 5 });
          const brokers: Broker[] = [await fx.broker(), await fx.broker()];
          const count = 12;
          await brokers[0]?.publishMany(
            table,
            Array.from({ length: count }, (_, n) => ({ payload: n, group: "ordered" })),
          );
          await brokers[0]?.publishMany(
            table,
            Array.from({ length: 4 }, (_, n) => ({ payload: 100 + n, group: "other" })),
          );
          const seen: Seen<number>[] = [];
          let inWork = 0;
          let maxInWork = 0;
          for (const broker of brokers) {
            await broker.subscribe<number>(
              table,
              async (delivery) => {
                inWork += 1;
                maxInWork = Math.max(maxInWork, inWork);
                see(seen, delivery);
                await pause(20);
                inWork -= 1;
              },
              { group: "ordered", workers: 3, pollInterval: 20 },
            );
          }
          await waitFor("every row of the group to be handled", () => seen.length >= count);
          expect(seen.map((s) => s.payload)).toEqual(Array.from({ length: count }, (_, n) => n));
          expect(maxInWork, "two rows of one FIFO group were in work at once").toBe(1);
          // The other group is not touched by subscriptions to "ordered".
          const left = await waitFor("the last row of the group to be acked", async () => {
            const rows = await fx.rows(table);
            return rows.length <= 4 ? rows : undefined;
          });
          expect(left.map((row) => row[columnNames.group])).toEqual(["other", "other", "other", "other"]);
        },
      );

      conformanceTest(harness, SUITE, `[${form}] FIFO order holds across two processes`, async (fx) => {
        await fx.requireFifo(form);
        fx.requireChildren();
        const table = await fx.table(form, { roles: ["attempt", "runAt", "group"], fifo: true, lease: 5 });
        const count = 10;
        const children = [0, 1].map(() =>
          fx.child({
            table: table.description,
            mode: "ack",
            workMs: 30,
            subscribe: { group: "ordered", workers: 3, pollInterval: 20 },
          }),
        );
        for (const child of children) await child.next("that it subscribed", isReady);
        const broker = await fx.broker();
        await broker.publishMany(
          table,
          Array.from({ length: count }, (_, n) => ({ payload: n, group: "ordered" })),
        );
        await waitFor("every row of the group to be acked", async () => (await fx.rows(table)).length === 0);
        for (const child of children) child.kill("SIGTERM");
        for (const child of children) await child.next("that it closed", isClosed);
        const started = children
          .flatMap((child) => child.events.filter(isStarted))
          .sort((a, b) => a.at - b.at);
        const finished = new Map(
          children.flatMap((child) => child.events.filter(isFinished)).map((f) => [f.id, f.at]),
        );
        expect(started.map((s) => s.payload)).toEqual(Array.from({ length: count }, (_, n) => n));
        started.forEach((event, index) => {
          const previous = started[index - 1];
          if (previous === undefined) return;
          expect(
            event.at,
            `row ${String(event.payload)} started before row ${String(previous.payload)} finished`,
          ).toBeGreaterThanOrEqual(finished.get(previous.id) ?? Number.POSITIVE_INFINITY);
        });
      });

      conformanceTest(harness, SUITE, `[${form}] retry() keeps the head of a FIFO group`, async (fx) => {
        await fx.requireFifo(form);
        const table = await fx.table(form, { roles: ["attempt", "runAt", "group"], fifo: true, lease: 5 });
        const broker = await fx.broker();
        await broker.publishMany(
          table,
          [0, 1, 2].map((n) => ({ payload: n, group: "g" })),
        );
        const seen: Seen<number>[] = [];
        await broker.subscribe<number>(
          table,
          (delivery) => {
            see(seen, delivery);
            return delivery.payload === 0 && delivery.attempt === 1 ? retry() : undefined;
          },
          { group: "g", workers: 2, pollInterval: 20 },
        );
        await waitFor("four deliveries", () => seen.length >= 4);
        expect(seen.map((s) => s.payload)).toEqual([0, 0, 1, 2]);
      });

      conformanceTest(
        harness,
        SUITE,
        `[${form}] retryAfter moves the head of a FIFO group behind rows due earlier`,
        async (fx) => {
          await fx.requireFifo(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "group"], fifo: true, lease: 5 });
          const broker = await fx.broker();
          await broker.publishMany(
            table,
            [0, 1, 2].map((n) => ({ payload: n, group: "g" })),
          );
          const seen: Seen<number>[] = [];
          await broker.subscribe<number>(
            table,
            (delivery) => {
              see(seen, delivery);
              return delivery.payload === 0 && delivery.attempt === 1 ? retryAfter(300) : undefined;
            },
            { group: "g", workers: 2, pollInterval: 20 },
          );
          await waitFor("four deliveries", () => seen.length >= 4);
          expect(seen.map((s) => s.payload)).toEqual([0, 1, 2, 0]);
        },
      );
    }
  });
}
