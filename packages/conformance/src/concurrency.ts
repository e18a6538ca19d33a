/**
 * Concurrency: two brokers (and, where keys are database-wide or the form is the lease, two
 * processes) draining one table never deliver a row twice and together deliver every row.
 *
 * @module
 */
import { expect } from "vitest";
import { isClosed, isReady, isStarted } from "./child-process.js";
import { countById, type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, formLabels } from "./tables.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "concurrency";
const ROWS = 60;

/** Registers the concurrency sub-suite. */
export function concurrencySuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("concurrency", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] two brokers draining one table never deliver a row twice and together deliver every row`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 10 });
          const brokers = [await fx.broker(), await fx.broker()];
          const seen: Seen[] = [];
          const perBroker = [0, 0];
          for (const [index, broker] of brokers.entries()) {
            await broker.subscribe(
              table,
              async (delivery) => {
                see(seen, delivery);
                perBroker[index] = (perBroker[index] ?? 0) + 1;
                await pause(5);
              },
              { workers: 4, batch: 2, pollInterval: 20 },
            );
          }
          const ids = await brokers[0]?.publishMany(
            table,
            Array.from({ length: ROWS }, (_, n) => ({ payload: n })),
          );
          await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
          const counts = countById(seen);
          expect(
            [...counts.values()].filter((count) => count > 1),
            "rows delivered twice",
          ).toEqual([]);
          expect(new Set(counts.keys())).toEqual(new Set((ids ?? []).map(String)));
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] two processes draining one table never deliver a row twice and together deliver every row`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          if (form === "advisory" && caps.advisoryScope === "process") {
            return fx.skip(
              `the ${harness.name} driver keeps advisory keys in the process (advisoryScope "process"): a second process cannot share its keys, so only one process may run advisory subscriptions on the database (the driver must refuse the second, as the robustness sub-suite's driver tests show)`,
            );
          }
          fx.requireChildren();
          const table = await fx.table(form, { lease: 10 });
          const children = [0, 1].map(() =>
            fx.child({
              table: table.description,
              mode: "ack",
              subscribe: { workers: 4, batch: 2, pollInterval: 20 },
            }),
          );
          for (const child of children) await child.next("that it subscribed", isReady);
          const broker = await fx.broker();
          const ids = await broker.publishMany(
            table,
            Array.from({ length: ROWS }, (_, n) => ({ payload: n })),
          );
          await waitFor(
            `every ${formLabels[form]} row to be acked`,
            async () => (await fx.rows(table)).length === 0,
          );
          for (const child of children) child.kill("SIGTERM");
          for (const child of children) await child.next("that it closed", isClosed);
          const started = children.flatMap((child) => child.events.filter(isStarted));
          const counts = countById(started);
          expect(
            [...counts.values()].filter((count) => count > 1),
            "rows delivered twice",
          ).toEqual([]);
          expect(new Set(counts.keys())).toEqual(new Set(ids.map(String)));
        },
      );
    }
  });
}
