/**
 * Crashes: a process killed (SIGKILL) mid-handler gives its row back as its form says — a
 * lease row after the lease, an advisory row at once, each with one attempt spent; a row lock
 * row at once with none spent. The killed process is a child runner
 * (`@rowclaim/conformance/child`) on the harness's `childDriverModule`.
 *
 * @module
 */
import { expect } from "vitest";
import { isReady, isStarted } from "./child-process.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames, formLabels } from "./tables.js";
import { toNumber } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "crash";

const returns = {
  rowLock: "at once with no attempt spent",
  lease: "after its lease with one attempt spent",
  advisory: "at once with one attempt spent",
} as const;

/** Registers the crash sub-suite (skipped where the harness gives no `childDriverModule`). */
export function crashSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("crashes", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a process killed mid-handler returns its ${formLabels[form]} row ${returns[form]}`,
        async (fx) => {
          await fx.requireForm(form);
          fx.requireChildren();
          const table = await fx.table(form, { lease: 1 });
          const child = fx.child({ table: table.description, mode: "hang", subscribe: { pollInterval: 50 } });
          await child.next("that it subscribed", isReady);
          const broker = await fx.broker();
          await broker.publish(table, { crash: form });
          const started = await child.next("that its handler started", isStarted);
          expect(started.attempt).toBe(1);
          child.kill("SIGKILL");
          await child.exited;

          const seen: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 50 });
          await waitFor("the row to be delivered again", () => seen.length > 0);
          const again = seen[0];
          expect(again?.attempt, "the attempt the redelivery reads").toBe(form === "rowLock" ? 1 : 2);
          if (form === "lease") {
            const expiry = started.leaseExpiry === null ? Number.NaN : Date.parse(started.leaseExpiry);
            expect(again?.at, "the lease row came back before its lease ran out").toBeGreaterThanOrEqual(
              expiry,
            );
          }
          await waitFor("the redelivered row to be acked", async () => (await fx.rows(table)).length === 0);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a killed process's claim is visible to a second connection as the form counts it`,
        async (fx) => {
          await fx.requireForm(form);
          fx.requireChildren();
          const table = await fx.table(form, { lease: 30 });
          const child = fx.child({ table: table.description, mode: "hang", subscribe: { pollInterval: 50 } });
          await child.next("that it subscribed", isReady);
          const broker = await fx.broker();
          await broker.publish(table, "held by a child");
          await child.next("that its handler started", isStarted);
          child.kill("SIGKILL");
          await child.exited;
          // Row lock: the server rolls the dead session's transaction back; the count was never made.
          const expected = form === "rowLock" ? 1 : 2;
          await waitFor(`the row's attempt to read ${expected}`, async () => {
            const [row] = await fx.rows(table);
            return row !== undefined && toNumber(row[columnNames.attempt]) === expected;
          });
        },
      );
    }
  });
}
