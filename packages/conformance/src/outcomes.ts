/**
 * Outcomes: ack, drop, retry, retryAfter, deadLetter, and a handler that throws until
 * `maxAttempts`, in every form the driver offers.
 *
 * @module
 */
import { ack, deadLetter, drop, type Outcome, retry, retryAfter } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames, deadLetterDescription, describeTable } from "./tables.js";
import { instant, isNull, toNumber } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "outcomes";

/** Registers the outcomes sub-suite. */
export function outcomesSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("outcomes", () => {
    for (const form of allForms) {
      conformanceTest(harness, SUITE, `[${form}] ack deletes the row`, async (fx) => {
        await fx.requireForm(form);
        const table = await fx.table(form);
        const broker = await fx.broker();
        const seen: Seen[] = [];
        await broker.subscribe(
          table,
          (delivery) => {
            see(seen, delivery);
            return ack();
          },
          { pollInterval: 50 },
        );
        await broker.publish(table, { n: 1 });
        await waitFor(
          "the row to be deleted",
          async () => seen.length > 0 && (await fx.rows(table)).length === 0,
        );
      });

      conformanceTest(
        harness,
        SUITE,
        `[${form}] ack marks processedAt where the table has it and the row is not claimed again`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "processedAt"] });
          const broker = await fx.broker();
          const seen: Seen[] = [];
          await broker.subscribe(
            table,
            (delivery) => {
              see(seen, delivery);
              return ack();
            },
            { pollInterval: 50 },
          );
          const [first] = await broker.publishMany(table, [{ payload: 1 }]);
          const rows = await waitFor("processedAt to be set", async () => {
            const rows = await fx.rows(table);
            return rows.length === 1 && !isNull(rows[0]?.[columnNames.processedAt]) ? rows : undefined;
          });
          if (form === "lease") expect(isNull(rows[0]?.[columnNames.lockedUntil])).toBe(true);
          // A second row goes through after the first: the marked row is passed over, not claimed again.
          await broker.publish(table, 2);
          await waitFor("the second row to be processed", () => seen.length >= 2);
          await waitFor("both rows to be marked", async () =>
            (await fx.rows(table)).every((row) => !isNull(row[columnNames.processedAt])),
          );
          expect(seen.map((s) => s.payload)).toEqual([1, 2]);
          expect(seen.filter((s) => s.id === String(first)).length).toBe(1);
        },
      );

      conformanceTest(harness, SUITE, `[${form}] drop finishes the row as ack does`, async (fx) => {
        await fx.requireForm(form);
        const plain = await fx.table(form);
        const marked = await fx.table(form, { roles: ["attempt", "processedAt"] });
        const broker = await fx.broker();
        await broker.subscribe(plain, () => drop(), { pollInterval: 50 });
        await broker.subscribe(marked, () => drop(), { pollInterval: 50 });
        await broker.publish(plain, "x");
        await broker.publish(marked, "y");
        await waitFor("the plain row to be deleted", async () => (await fx.rows(plain)).length === 0);
        await waitFor("the marked row to be marked processed", async () => {
          const rows = await fx.rows(marked);
          return rows.length === 1 && !isNull(rows[0]?.[columnNames.processedAt]);
        });
      });

      conformanceTest(
        harness,
        SUITE,
        `[${form}] retry makes the row due at once, keeping its runAt, and counts the attempt`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt"] });
          const broker = await fx.broker();
          const publishedRunAt = new Date(Date.now() - 5000);
          await broker.publish(table, "again", { runAt: publishedRunAt });
          const [published] = await fx.rows(table);
          const seen: Seen[] = [];
          const runAtOnRedelivery: unknown[] = [];
          // A long poll interval: the redelivery must come from the row being due at once, not from a later poll.
          await broker.subscribe(
            table,
            async (delivery) => {
              see(seen, delivery);
              if (seen.length === 1) return retry();
              runAtOnRedelivery.push((await fx.rows(table))[0]?.[columnNames.runAt]);
              return ack();
            },
            { pollInterval: 60_000 },
          );
          // Wait for what is asserted: the handler records runAt only after reading the row back.
          await waitFor("the redelivery to read its row back", () => runAtOnRedelivery.length > 0, {
            timeoutMs: 15_000,
          });
          expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
          expect(instant(runAtOnRedelivery[0])).toEqual(instant(published?.[columnNames.runAt]));
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a retried row is delivered again at once while the claim loop sleeps out a long pollInterval`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt"] });
          const broker = await fx.broker();
          const seen: Seen[] = [];
          // Two workers and one row: the second claim finds nothing and the loop sleeps for a
          // minute, so the redelivery must come from the retry waking it.
          await broker.subscribe(
            table,
            (delivery) => {
              see(seen, delivery);
              return seen.length === 1 ? retry() : ack();
            },
            { workers: 2, pollInterval: 60_000 },
          );
          await broker.publish(table, "again");
          await waitFor(
            "the row to be delivered again and acked",
            async () => seen.length >= 2 && (await fx.rows(table)).length === 0,
            {
              timeoutMs: 15_000,
            },
          );
          expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
        },
      );

      conformanceTest(harness, SUITE, `[${form}] retryAfter hides the row until it is due`, async (fx) => {
        await fx.requireForm(form);
        const table = await fx.table(form, { roles: ["attempt", "runAt"] });
        const broker = await fx.broker();
        const seen: Seen[] = [];
        let retriedAt = 0;
        const delay = 1500;
        await broker.subscribe(
          table,
          (delivery) => {
            see(seen, delivery);
            if (seen.length === 1) {
              retriedAt = Date.now();
              return retryAfter(delay);
            }
            return ack();
          },
          { pollInterval: 50 },
        );
        await broker.publish(table, "later");
        await waitFor("the retry to be written", async () => {
          const [row] = await fx.rows(table);
          return retriedAt > 0 && row !== undefined && toNumber(row[columnNames.attempt]) === 2;
        });
        await waitFor("the redelivery once due", () => seen.length >= 2);
        expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
        expect(seen[1]?.at).toBeGreaterThanOrEqual(retriedAt + delay);
      });

      conformanceTest(
        harness,
        SUITE,
        `[${form}] deadLetter() moves the row to the dead-letter group`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, {
            roles: ["attempt", "runAt", "group"],
            maxAttempts: 5,
            deadLetter: { group: "dead" },
          });
          const broker = await fx.broker();
          const seen: Seen[] = [];
          await broker.subscribe(
            table,
            (delivery) => {
              see(seen, delivery);
              return deadLetter();
            },
            { group: "work", pollInterval: 50 },
          );
          await broker.publish(table, { doomed: true }, { group: "work" });
          const [row] = await waitFor("the row to move to the dead group", async () => {
            const rows = await fx.rows(table);
            return rows.length === 1 && rows[0]?.[columnNames.group] === "dead" ? rows : undefined;
          });
          expect(seen).toHaveLength(1);
          if (form === "lease") expect(isNull(row?.[columnNames.lockedUntil])).toBe(true);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] deadLetter() moves the row to the dead-letter table`,
        async (fx) => {
          await fx.requireForm(form);
          const name = fx.uniqueName();
          const deadName = `${name}_dead`;
          const description = describeTable(form, name, {
            roles: ["attempt", "runAt", "headers"],
            maxAttempts: 5,
            deadLetter: { table: deadName },
          });
          const dead = await fx.tableFrom(deadLetterDescription(description, deadName));
          const table = await fx.tableFrom(description);
          const broker = await fx.broker();
          await broker.subscribe(table, () => deadLetter(), { pollInterval: 50 });
          await broker.publish(table, { doomed: "ü" }, { headers: { trace: "t-1" } });
          const [row] = await waitFor("the row to move to the dead-letter table", async () => {
            const rows = await fx.rows(dead);
            return rows.length === 1 ? rows : undefined;
          });
          expect(await fx.rows(table)).toEqual([]);
          if (form === "lease") expect(isNull(row?.[columnNames.lockedUntil])).toBe(true);
          // The dead row keeps its payload and headers: a subscription on the dead table reads them back.
          const received: Seen[] = [];
          await broker.subscribe(dead, (delivery) => void see(received, delivery), { pollInterval: 50 });
          await waitFor("the dead row to be delivered from the dead-letter table", () => received.length > 0);
          expect(received[0]?.payload).toEqual({ doomed: "ü" });
          expect(received[0]?.delivery.headers).toEqual({ trace: "t-1" });
        },
      );

      for (const target of ["group", "table"] as const) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] a handler that throws is retried and at maxAttempts moves to the dead-letter ${target}`,
          async (fx) => {
            await fx.requireForm(form);
            const name = fx.uniqueName();
            const deadName = `${name}_dead`;
            const description = describeTable(form, name, {
              roles: ["attempt", "runAt", "group"],
              maxAttempts: 3,
              deadLetter: target === "group" ? { group: "dead" } : { table: deadName },
            });
            const dead =
              target === "table"
                ? await fx.tableFrom(deadLetterDescription(description, deadName))
                : undefined;
            const table = await fx.tableFrom(description);
            const broker = await fx.broker();
            const seen: Seen[] = [];
            await broker.subscribe(
              table,
              (delivery): Outcome => {
                see(seen, delivery);
                throw new Error("the handler fails on purpose");
              },
              { group: "work", pollInterval: 50, backoff: { baseMs: 1 } },
            );
            await broker.publish(table, "fails", { group: "work" });
            if (dead === undefined) {
              await waitFor(
                "the row to move to the dead group",
                async () => (await fx.rows(table))[0]?.[columnNames.group] === "dead",
              );
            } else {
              await waitFor(
                "the row to move to the dead-letter table",
                async () => (await fx.rows(dead)).length === 1,
              );
              expect(await fx.rows(table)).toEqual([]);
            }
            expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3]);
          },
        );
      }

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a dead-letter table named in the subscription's options takes the place of the table's own: rows move there`,
        async (fx) => {
          await fx.requireForm(form);
          const name = fx.uniqueName();
          const description = describeTable(form, name, {
            roles: ["attempt", "runAt"],
            maxAttempts: 5,
            deadLetter: { table: `${name}_dead` },
          });
          const ownDead = await fx.tableFrom(deadLetterDescription(description, `${name}_dead`));
          const overrideDead = await fx.tableFrom(deadLetterDescription(description, `${name}_other`));
          const table = await fx.tableFrom(description);
          const broker = await fx.broker();
          const seen: Seen[] = [];
          await broker.subscribe(
            table,
            (delivery): Outcome => {
              see(seen, delivery);
              if (delivery.payload === "thrown") throw new Error("the handler fails on purpose");
              return deadLetter();
            },
            {
              maxAttempts: 2,
              deadLetter: { table: overrideDead.name },
              pollInterval: 20,
              backoff: { baseMs: 1 },
            },
          );
          await broker.publishMany(table, [{ payload: "thrown" }, { payload: "dead-lettered" }]);
          const moved = await waitFor("both rows to move to the options' dead-letter table", async () => {
            const rows = await fx.rows(overrideDead);
            return rows.length === 2 ? rows : undefined;
          });
          expect(await fx.rows(table)).toEqual([]);
          expect(await fx.rows(ownDead), "a row moved to the table's own dead-letter table").toEqual([]);
          // At the options' cap (2), not the table's (5).
          expect(seen.filter((s) => s.payload === "thrown").map((s) => s.attempt)).toEqual([1, 2]);
          expect(moved).toHaveLength(2);
        },
      );
    }
  });
}
