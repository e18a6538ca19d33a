/**
 * Retries that honour their delay on every table: a handler that throws on a table without a
 * `runAt` column is retried after its backoff, never at once (the lease form moves the lease to
 * the due time; the row lock and advisory forms hold the row until then), and a subscription
 * that retried a row wakes when it is due, not at its next poll (the poll interval here is far
 * longer than any test waits).
 *
 * @module
 */
import { ack, type ColumnRole, retryAfter } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "retrydelay";

/** A poll interval no test waits out: a delivery before it came from the due-time wake. */
const NEVER_POLL_MS = 600_000;

/** The backoff of the throwing handler, in milliseconds. */
const BACKOFF_MS = 300;

/** How early a clock read may be against the host's timers, in milliseconds. */
const CLOCK_SLACK_MS = 5;

/** The table shapes: without `runAt`, and with it. */
const shapes: readonly {
  readonly label: string;
  readonly roles: Exclude<ColumnRole, "id" | "payload" | "lockedUntil">[];
}[] = [
  { label: "without runAt", roles: ["attempt", "group"] },
  { label: "with runAt", roles: ["attempt", "group", "runAt"] },
];

/** Registers the retry delay sub-suite. */
export function retryDelaySuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("retry delay", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a handler that throws on a table without runAt is called at most maxAttempts times, each retry after its backoff, then dead-lettered`,
        async (fx) => {
          await fx.requireForm(form);
          const maxAttempts = 3;
          const table = await fx.table(form, {
            roles: ["attempt", "group"],
            maxAttempts,
            deadLetter: { group: "dead" },
          });
          const broker = await fx.broker();
          await broker.publish(table, "poison", { group: "work" });
          const seen: Seen[] = [];
          await broker.subscribe(
            table,
            (delivery) => {
              see(seen, delivery);
              throw new Error("the handler fails every time");
            },
            { group: "work", pollInterval: 20, backoff: { baseMs: BACKOFF_MS, maxMs: BACKOFF_MS } },
          );
          await waitFor("the row in the dead group", async () => {
            const rows = await fx.rows(table);
            return rows.length === 1 && rows[0]?.[columnNames.group] === "dead";
          });
          expect(seen.length, "handler calls").toBeLessThanOrEqual(maxAttempts);
          expect(seen.map((s) => s.attempt)).toEqual(seen.map((_, index) => index + 1));
          for (let index = 1; index < seen.length; index += 1) {
            const gap = (seen[index]?.at ?? 0) - (seen[index - 1]?.at ?? 0);
            expect(gap, `the gap before call ${index + 1}`).toBeGreaterThanOrEqual(
              BACKOFF_MS - CLOCK_SLACK_MS,
            );
          }
        },
      );

      for (const shape of shapes) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] ${shape.label}: a row retried with retryAfter(200) is claimed again when it is due, long before the next poll`,
          async (fx) => {
            await fx.requireForm(form);
            const table = await fx.table(form, { roles: shape.roles });
            const broker = await fx.broker();
            const seen: Seen[] = [];
            await broker.publish(table, "later", { group: "work" });
            await broker.subscribe(
              table,
              (delivery) => {
                see(seen, delivery);
                return delivery.attempt === 1 ? retryAfter(200) : ack();
              },
              { group: "work", pollInterval: NEVER_POLL_MS, listen: false },
            );
            // Within the test's timeout, far shorter than the poll: only the due-time wake claims it.
            await waitFor("the retried row's second delivery", () => seen.length >= 2, { timeoutMs: 20_000 });
            expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
            const gap = (seen[1]?.at ?? 0) - (seen[0]?.at ?? 0);
            expect(gap, "the retry's delay").toBeGreaterThanOrEqual(200 - CLOCK_SLACK_MS);
            await waitFor("the row acked", async () => (await fx.rows(table)).length === 0);
            await broker.close({ timeout: 2000 });
          },
        );
      }
    }
  });
}
