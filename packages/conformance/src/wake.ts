/**
 * Wake-up: a publish wakes the table's subscriptions at once instead of leaving them to their
 * next poll (in the same process always; from another process where the driver listens, and
 * by the next poll where it does not).
 *
 * @module
 */
import { expect } from "vitest";
import { isPublished } from "./child-process.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "wake";

/**
 * A poll interval no test waits out (longer than a conformance test may run): a delivery the
 * test sees at all came from a wake-up, so no test measures how soon it came.
 */
const LONG_POLL_MS = 120_000;

/** The poll interval of a subscription only a poll can reach (another process's publish, without cross-process wake). */
const SHORT_POLL_MS = 200;

/** Registers the wake-up sub-suite. */
export function wakeSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("wake-up", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a publish in the same process wakes a subscription with a long pollInterval at once`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form);
          const broker = await fx.broker();
          const seen: Seen[] = [];
          const subscription = await broker.subscribe(table, (delivery) => void see(seen, delivery), {
            pollInterval: LONG_POLL_MS,
          });
          // The subscription's first claim found nothing: it waits out its poll interval now.
          await subscription.idle();
          await broker.publish(table, "wake up");
          // Seen at all, before the poll interval: the publish woke it.
          await waitFor("the woken subscription's delivery", () => seen.length > 0);
          expect(seen[0]?.payload).toBe("wake up");
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "a publish from another process reaches a subscription: woken at once (well under a long pollInterval) where the driver wakes other processes, by its next poll where it does not",
      async (fx) => {
        const caps = await fx.capabilities();
        fx.requireChildren();
        const form = caps.forms[0] ?? "lease";
        const table = await fx.table(form);
        const broker = await fx.broker();
        const seen: Seen[] = [];
        const pollInterval = caps.crossProcessWake ? LONG_POLL_MS : SHORT_POLL_MS;
        const subscription = await broker.subscribe(table, (delivery) => void see(seen, delivery), {
          pollInterval,
        });
        // The subscription's first claim found nothing: it waits out its poll interval now.
        await subscription.idle();
        const child = fx.child({ table: table.description, mode: "publish", payloads: ["from afar"] });
        await child.next("its publish", isPublished);
        // Where the driver wakes other processes, the poll interval outlasts the test: a delivery
        // seen at all came from the wake-up.
        await waitFor("the other process's row to be delivered", () => seen.length > 0);
        expect(seen[0]?.payload).toBe("from afar");
        await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
      },
    );
  });
}
