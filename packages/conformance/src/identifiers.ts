/**
 * Identifiers: table and column names with quotes, spaces and SQL in them are always quoted,
 * never executed: they work end to end, or the driver refuses them with a rowclaim error.
 *
 * @module
 */
import { ack, BrokerError, defineTable, type TableDescription } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "ident";

/** Registers the identifiers sub-suite. */
export function identifiersSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("identifiers", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] table and column names with quotes, spaces and SQL in them are quoted, never executed`,
        async (fx) => {
          await fx.requireForm(form);
          // A plain table the odd name tries to drop: it must survive.
          const sentinel = await fx.table(form);
          const name = `${sentinel.name}"'\` x;drop table ${sentinel.name};--`;
          const account = `acc"t'\`;x`;
          const description: TableDescription = {
            name,
            columns: {
              id: `i"d`,
              payload: "pay load",
              attempt: "at'tempt",
              runAt: "run`at",
              ...(form === "lease" ? { lockedUntil: "locked;until" } : {}),
            },
            extraColumns: [account],
            ...(form === "lease" ? { lease: 5 } : {}),
            ...(form === "advisory" ? { advisoryLock: `${name}-{${account}}` } : {}),
          };
          const table = defineTable(description);
          fx.dropLater(table);
          const broker = await fx.broker();
          const seen: Seen[] = [];
          try {
            await fx.createTable(table);
            await broker.publish(table, { odd: true }, { values: { [account]: "a'1" } });
            await broker.subscribe(
              table,
              (delivery) => {
                see(seen, delivery);
                return ack();
              },
              { pollInterval: 20 },
            );
          } catch (error) {
            if (BrokerError.is(error)) {
              // Refused cleanly with a rowclaim error: allowed, as long as nothing was executed.
              expect(await fx.rows(sentinel)).toEqual([]);
              return;
            }
            throw error;
          }
          await waitFor(
            "the odd table's row to be delivered and acked",
            async () => seen.length > 0 && (await fx.rows(table)).length === 0,
          );
          expect(seen[0]?.payload).toEqual({ odd: true });
          expect(await fx.rows(sentinel), "the table named inside the odd name was dropped").toEqual([]);
        },
      );
    }
  });
}
