/**
 * Transactions: a table naming an isolation level (or SQLite transaction mode) the driver takes
 * claims and settles at it; a publish inside the caller's own transaction exists only if that
 * transaction commits.
 *
 * @module
 */
import {
  ack,
  type ClaimFormName,
  type IsolationLevel,
  isolationLevels,
  retry,
  type TransactionMode,
  transactionModes,
} from "@rowclaim/core";
import { describe, expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceTest, optOutCheck } from "./registry.js";
import { allForms, formLabels } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "transactions";

/** Claims, retries and acks a row of a table in `form` that names `level` or `mode`. */
async function claimsAt(
  fx: Fixture,
  form: ClaimFormName,
  setting: { readonly isolation: IsolationLevel } | { readonly mode: TransactionMode },
): Promise<void> {
  const table = await fx.table(form, { ...setting, lease: 5 });
  const broker = await fx.broker();
  const seen: Seen[] = [];
  await broker.subscribe(
    table,
    (delivery) => {
      see(seen, delivery);
      return seen.length === 1 ? retry() : ack();
    },
    { pollInterval: 20 },
  );
  await broker.publishMany(table, [{ payload: 1 }]);
  await waitFor(
    "the row to be retried and acked",
    async () => seen.length >= 2 && (await fx.rows(table)).length === 0,
  );
  expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
}

/** Registers the transactions sub-suite. */
export function transactionsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  describe("transactions", () => {
    for (const form of allForms) {
      for (const level of isolationLevels) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] a table naming isolation "${level}" claims and settles`,
          async (fx) => {
            const caps = await fx.requireForm(form);
            if (!caps.isolationLevels.includes(level)) {
              return fx.skip(`the ${harness.name} driver does not take isolation "${level}"`);
            }
            await claimsAt(fx, form, { isolation: level });
          },
        );
      }
      for (const mode of transactionModes) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] a table naming mode "${mode}" claims and settles`,
          async (fx) => {
            const caps = await fx.requireForm(form);
            if (!caps.transactionModes.includes(mode)) {
              return fx.skip(`the ${harness.name} driver does not take transaction mode "${mode}"`);
            }
            await claimsAt(fx, form, { mode });
          },
        );
      }
    }

    conformanceTest(
      harness,
      SUITE,
      "a publish inside the caller's transaction exists only if that transaction commits",
      async (fx) => {
        const caps = await fx.capabilities();
        if (!caps.transactionalPublish) {
          return fx.skip(
            `the ${harness.name} driver cannot publish inside a caller's transaction (transactionalPublish is false)`,
          );
        }
        const inTransaction = harness.inTransaction?.bind(harness);
        if (inTransaction === undefined) {
          return fx.skip(
            `the ${harness.name} harness gives no inTransaction(), so no test can open a transaction for publish`,
          );
        }
        const form = caps.forms[0] ?? "lease";
        const table = await fx.table(form);
        const broker = await fx.broker();
        await inTransaction(
          async (client) => {
            await broker.publish(table, "rolled back", { client });
          },
          { rollback: true },
        );
        expect(
          await fx.rows(table),
          `the row published in a rolled-back transaction (${formLabels[form]} table) exists`,
        ).toEqual([]);
        await inTransaction(
          async (client) => {
            await broker.publishMany(table, [{ payload: "committed" }, { payload: "also committed" }], {
              client,
            });
          },
          { rollback: false },
        );
        const seen: Seen[] = [];
        await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
        await waitFor(
          "the committed rows to be delivered",
          async () => seen.length >= 2 && (await fx.rows(table)).length === 0,
        );
        expect(seen.map((s) => s.payload)).toEqual(["committed", "also committed"]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "publish with a client fails with INVALID_ARGUMENT where the driver cannot publish in a transaction",
      async (fx) => {
        const caps = await fx.capabilities();
        if (caps.transactionalPublish)
          return fx.skip(`the ${harness.name} driver publishes inside a caller's transaction`);
        const table = await fx.table(caps.forms[0] ?? "lease");
        const broker = await fx.broker();
        expectCode(await caught(() => broker.publish(table, 1, { client: {} })), "INVALID_ARGUMENT");
        expect(await fx.rows(table)).toEqual([]);
      },
    );
  });
}
