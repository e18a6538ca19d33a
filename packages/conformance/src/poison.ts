/**
 * A poison row: one row whose ack the database refuses (a constraint, a trigger) while every
 * other row's goes through. Its redelivery is bounded in every form: at most `maxAttempts`
 * handler calls, each attempt counted (the row lock form counts it where the batch's rollback
 * cannot undo it), then the dead letter; the other rows of its batch are handled and acked once.
 *
 * @module
 */
import { ack } from "@rowclaim/core";
import { expect } from "vitest";
import { countById, type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames } from "./tables.js";
import { idKey, isNull } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "poison";

/** Rows published together; the third is the poison. */
const ROWS = 5;

/** Registers the poison row sub-suite. */
export function poisonSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("poison", () => {
    for (const form of allForms) {
      for (const batch of [1, ROWS]) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] batch ${batch}: a row whose ack the database refuses is tried at most maxAttempts times, then dead-lettered; the other rows are acked once`,
          async (fx) => {
            await fx.requireForm(form);
            const refuse = fx.requireRefuseProcessedAt();
            const maxAttempts = 3;
            const table = await fx.table(form, {
              roles: ["attempt", "runAt", "group", "processedAt"],
              maxAttempts,
              deadLetter: { group: "dead" },
            });
            const broker = await fx.broker();
            const ids = await broker.publishMany(
              table,
              Array.from({ length: ROWS }, (_, n) => ({ payload: n, group: "work" })),
            );
            const poison = ids[2];
            if (poison === undefined) throw new Error("publishMany returned too few ids");
            // Dropping the table at the end drops the constraint (or trigger) with it.
            await refuse(table, poison);
            const seen: Seen[] = [];
            await broker.subscribe(
              table,
              (delivery) => {
                see(seen, delivery);
                return ack();
              },
              { group: "work", workers: ROWS, batch, pollInterval: 20, backoff: { baseMs: 20, maxMs: 200 } },
            );
            const poisonKey = idKey(poison);
            await waitFor(
              "the poison row in the dead group and every other row processed",
              async () => {
                const rows = await fx.rows(table);
                return rows.every((row) =>
                  idKey(row[columnNames.id]) === poisonKey
                    ? row[columnNames.group] === "dead"
                    : !isNull(row[columnNames.processedAt]),
                );
              },
              { timeoutMs: 40_000 },
            );
            const counts = countById(seen);
            const calls = seen.filter((s) => s.id === poisonKey);
            expect(calls.length, "handler calls of the poison row").toBeGreaterThanOrEqual(1);
            expect(calls.length, "handler calls of the poison row").toBeLessThanOrEqual(maxAttempts);
            // Each call is a new, counted attempt.
            const attempts = calls.map((s) => s.attempt);
            expect(attempts).toEqual([...attempts].sort((a, b) => a - b));
            expect(new Set(attempts).size).toBe(attempts.length);
            for (const id of ids) {
              if (idKey(id) === poisonKey) continue;
              expect(counts.get(idKey(id)), `handler calls of row ${idKey(id)}`).toBe(1);
            }
          },
        );
      }
    }
  });
}
