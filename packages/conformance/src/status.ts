/**
 * Status: `readQueueStatus` and `listInWork` over the driver's `queueStatus` reader tell a
 * table's real state per group — due, delayed, in work (by the form's own means), dead and
 * processed — stop counting at the cap and say so, and name what holds a row in work. Skipped
 * for a driver without a reader.
 *
 * @module
 */
import {
  ack,
  type Delivery,
  type Driver,
  type GroupStatus,
  listInWork,
  type QueueStatus,
  readQueueStatus,
} from "@rowclaim/core";
import { expect } from "vitest";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, deadLetterDescription, describeTable, formLabels } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "status";

const HOUR_MS = 3_600_000;

async function statusDriver(fx: Fixture): Promise<Driver> {
  const driver = await fx.harness.createDriver();
  // A broker on it closes it after the test.
  fx.brokerOn(driver);
  if (driver.queueStatus === undefined) fx.skip("the driver has no queueStatus reader");
  return driver;
}

function group(status: QueueStatus, name: string | null): GroupStatus | undefined {
  return status.groups.find((entry) => entry.group === name);
}

/** A group's figures as plain numbers (none of them capped). */
function figures(entry: GroupStatus | undefined): Record<string, number | boolean> {
  if (entry === undefined) return {};
  const { due, delayed, inWork, dead, processed } = entry;
  return {
    due: due.count,
    delayed: delayed.count,
    inWork: inWork.count,
    dead: dead.count,
    processed: processed.count,
    capped: [due, delayed, inWork, dead, processed].some((count) => count.capped),
  };
}

/** Registers the status sub-suite. */
export function statusSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("status", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] readQueueStatus counts each group's due, delayed, in work, dead and processed rows while a ${formLabels[form]} delivery is held, and listInWork names the held row`,
        async (fx) => {
          await fx.requireForm(form);
          const driver = await statusDriver(fx);
          const table = await fx.table(form, {
            roles: ["attempt", "runAt", "priority", "group", "processedAt"],
            maxAttempts: 3,
            deadLetter: { group: "dead" },
            lease: 30,
          });
          const broker = await fx.broker();
          const future = new Date(Date.now() + HOUR_MS);
          const past = new Date(Date.now() - 60_000);
          await broker.publish(table, "due 1", { group: "a", runAt: past });
          await broker.publish(table, "due 2", { group: "a", priority: 5 });
          await broker.publish(table, "later", { group: "a", runAt: future });
          await broker.publish(table, "dead", { group: "dead" });
          await broker.publish(table, "done", { group: "b" });
          // Group b: one row acked (marked processed).
          await broker.subscribe(table, () => ack(), { group: "b", pollInterval: 50 });
          await waitFor("group b's row to be marked processed", async () => {
            const status = await readQueueStatus(driver, table);
            return group(status, "b")?.processed.count === 1;
          });
          // Group a: one delivery held (the first in claim order, "due 1").
          const release = fx.gate();
          let held: Delivery | undefined;
          await broker.subscribe(
            table,
            async (delivery) => {
              held ??= delivery;
              await release.opened;
              return ack();
            },
            { group: "a", pollInterval: 50, workers: 1, batch: 1 },
          );
          await waitFor("group a's first row to be claimed", () => held !== undefined);
          const status = await readQueueStatus(driver, table);
          expect(status.table).toBe(table.name);
          expect(status.form).toBe(form);
          expect(figures(group(status, "a"))).toEqual({
            due: 1,
            delayed: 1,
            inWork: 1,
            dead: 0,
            processed: 0,
            capped: false,
          });
          expect(figures(group(status, "b"))).toEqual({
            due: 0,
            delayed: 0,
            inWork: 0,
            dead: 0,
            processed: 1,
            capped: false,
          });
          expect(figures(group(status, "dead"))).toEqual({
            due: 0,
            delayed: 0,
            inWork: 0,
            dead: 1,
            processed: 0,
            capped: false,
          });
          // The one due row of group a ("due 2") has been due since it was published.
          expect(group(status, "a")?.oldestDueAgeMs ?? -1).toBeGreaterThanOrEqual(0);
          const inWork = await listInWork(driver, table);
          expect(inWork.map((row) => String(row.id))).toEqual([String(held?.id)]);
          const [row] = inWork;
          expect(row?.group).toBe("a");
          expect(row?.holder.form).toBe(form);
          if (form === "lease") expect(row?.holder.lockedUntil?.getTime() ?? 0).toBeGreaterThan(Date.now());
          if (form === "advisory") expect(row?.holder.key).toBeDefined();
          expect(await listInWork(driver, table, { group: "b" })).toEqual([]);
          release.open();
          await waitFor("group a's due rows to be acked, none left in work", async () => {
            const after = figures(group(await readQueueStatus(driver, table), "a"));
            return after.inWork === 0 && after.processed === 2 && after.delayed === 1;
          });
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "a count stops at the cap and says it did; a cap that is not a whole number of at least 1 is refused with INVALID_ARGUMENT",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms.includes("lease") ? "lease" : (caps.forms[0] ?? "lease");
        const driver = await statusDriver(fx);
        const table = await fx.table(form, { roles: ["attempt", "runAt"] });
        const broker = await fx.broker();
        for (let index = 0; index < 5; index += 1) await broker.publish(table, `row ${index}`);
        const capped = await readQueueStatus(driver, table, { cap: 3 });
        expect(capped.groups).toHaveLength(1);
        expect(capped.groups[0]?.group).toBeNull();
        expect(capped.groups[0]?.due).toEqual({ count: 3, capped: true });
        const exact = await readQueueStatus(driver, table, { cap: 5 });
        expect(exact.groups[0]?.due).toEqual({ count: 5, capped: false });
        await expect(readQueueStatus(driver, table, { cap: 0 })).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
        });
        await expect(listInWork(driver, table, { limit: 1.5 })).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
        });
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "readQueueStatus shows a paused table's groups, and a group paused on its own, as paused (where the driver keeps run-time controls)",
      async (fx) => {
        const caps = await fx.capabilities();
        if (caps.controls !== true) fx.skip("the driver keeps no run-time controls (capabilities.controls)");
        const form = caps.forms.includes("lease") ? "lease" : (caps.forms[0] ?? "lease");
        const driver = await statusDriver(fx);
        const table = await fx.table(form, { roles: ["attempt", "runAt", "group"] });
        const broker = await fx.broker();
        await broker.publish(table, "one", { group: "a" });
        await broker.publish(table, "two", { group: "b" });
        const paused = (status: QueueStatus): [string | null, boolean][] =>
          status.groups.map((entry) => [entry.group, entry.paused]);
        expect(paused(await readQueueStatus(driver, table))).toEqual([
          ["a", false],
          ["b", false],
        ]);
        await broker.pause(table, { group: "b" });
        const groupPaused = await readQueueStatus(driver, table);
        expect(paused(groupPaused)).toEqual([
          ["a", false],
          ["b", true],
        ]);
        expect(groupPaused.controls?.pausedGroups).toEqual(["b"]);
        await broker.pause(table);
        expect(paused(await readQueueStatus(driver, table))).toEqual([
          ["a", true],
          ["b", true],
        ]);
        await broker.resume(table);
        await broker.resume(table, { group: "b" });
        expect(paused(await readQueueStatus(driver, table))).toEqual([
          ["a", false],
          ["b", false],
        ]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "the rows of a table's dead-letter table count as dead in their own group",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms.includes("lease") ? "lease" : (caps.forms[0] ?? "lease");
        const driver = await statusDriver(fx);
        const deadName = fx.uniqueName();
        const description = describeTable(form, fx.uniqueName(), {
          roles: ["attempt", "runAt", "group"],
          maxAttempts: 2,
          deadLetter: { table: deadName },
        });
        const table = await fx.tableFrom(description);
        const deadTable = await fx.tableFrom(deadLetterDescription(description, deadName));
        const broker = await fx.broker();
        await broker.publish(table, "waiting", { group: "a" });
        await broker.publish(deadTable, "dead 1", { group: "a" });
        await broker.publish(deadTable, "dead 2", { group: "z" });
        const status = await readQueueStatus(driver, table);
        expect(status.groups.map((entry) => [entry.group, entry.due.count, entry.dead.count])).toEqual([
          ["a", 1, 1],
          ["z", 0, 1],
        ]);
      },
    );
  });
}
