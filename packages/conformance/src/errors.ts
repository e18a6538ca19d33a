/**
 * Refusals with stable codes, each beside what works: a table in each form (and FIFO in each
 * form) is claimed where the driver offers it and refused with UNSUPPORTED_FORM where it does
 * not; SERVER_TOO_OLD at startup for a table the driver's version floor covers; SCHEMA for a missing table, column or dead-letter table (the table's own or one a
 * subscription's options name); INVALID_ARGUMENT for a payload the table cannot hold (writing
 * nothing); CLOSED after close.
 *
 * @module
 */
import { ack, BrokerError, type ClaimFormName, defineTable, type TableDescription } from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { type Seen, see } from "./deliveries.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import {
  allForms,
  columnNames,
  deadLetterDescription,
  describeTable,
  fifoForms,
  formLabels,
} from "./tables.js";
import { toNumber } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "errors";

/** Registers the errors sub-suite. */
export function errorsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("errors", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a table in the ${formLabels[form]} form: subscribing claims its rows where the driver offers the form, and fails with UNSUPPORTED_FORM where it does not`,
        async (fx) => {
          const caps = await fx.capabilities();
          if (!caps.forms.includes(form)) {
            // The table is never created: the refusal must come before the driver looks for it
            // (a driver asked would report SCHEMA).
            const table = defineTable(describeTable(form, fx.uniqueName()));
            fx.dropLater(table);
            const broker = await fx.broker();
            expectCode(await caught(() => broker.subscribe(table, () => ack())), "UNSUPPORTED_FORM");
            return;
          }
          const table = await fx.table(form);
          const broker = await fx.broker();
          const seen: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
          await broker.publish(table, `offered ${form}`);
          await waitFor(
            "the row to be delivered and acked",
            async () => seen.length > 0 && (await fx.rows(table)).length === 0,
          );
          expect(seen.map((s) => s.payload)).toEqual([`offered ${form}`]);
        },
      );
    }

    for (const form of fifoForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a FIFO table in the ${formLabels[form]} form: subscribing claims its group in order where the driver guards FIFO groups in the form, and fails with UNSUPPORTED_FORM where it does not`,
        async (fx) => {
          const caps = await fx.capabilities();
          const shape = { roles: ["attempt", "group"], fifo: true, lease: 5 } as const;
          if (!caps.fifo.includes(form)) {
            // Never created, as above: the refusal comes before the driver is asked.
            const table = defineTable(describeTable(form, fx.uniqueName(), shape));
            fx.dropLater(table);
            const broker = await fx.broker();
            expectCode(
              await caught(() => broker.subscribe(table, () => ack(), { group: "g" })),
              "UNSUPPORTED_FORM",
            );
            return;
          }
          const table = await fx.table(form, shape);
          const broker = await fx.broker();
          await broker.publishMany(
            table,
            [0, 1, 2].map((n) => ({ payload: n, group: "g" })),
          );
          const seen: Seen<number>[] = [];
          await broker.subscribe<number>(table, (delivery) => void see(seen, delivery), {
            group: "g",
            workers: 2,
            pollInterval: 20,
          });
          await waitFor(
            "the group's rows to be delivered and acked",
            async () => seen.length >= 3 && (await fx.rows(table)).length === 0,
          );
          expect(seen.map((s) => s.payload)).toEqual([0, 1, 2]);
        },
      );
    }

    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribing to a missing table fails with SCHEMA`,
        async (fx) => {
          await fx.requireForm(form);
          const table = defineTable(describeTable(form, fx.uniqueName()));
          fx.dropLater(table);
          const broker = await fx.broker();
          expectCode(await caught(() => broker.subscribe(table, () => ack())), "SCHEMA");
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribing to a table missing a described column fails with SCHEMA`,
        async (fx) => {
          await fx.requireForm(form);
          const created = await fx.table(form, { roles: ["attempt"] });
          const described = defineTable({
            ...created.description,
            columns: { ...created.description.columns, priority: "priority_missing" },
          } satisfies TableDescription);
          const broker = await fx.broker();
          const error = await caught(() => broker.subscribe(described, () => ack()));
          expectCode(error, "SCHEMA");
          expect((error as { column?: unknown }).column).toBe("priority_missing");
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribing with a dead-letter table that does not exist fails with SCHEMA`,
        async (fx) => {
          await fx.requireForm(form);
          const name = fx.uniqueName();
          const table = await fx.tableFrom(
            describeTable(form, name, {
              roles: ["attempt"],
              maxAttempts: 2,
              deadLetter: { table: `${name}_nowhere` },
            }),
          );
          fx.dropLater(defineTable(deadLetterDescription(table.description, `${name}_nowhere`)));
          const broker = await fx.broker();
          expectCode(await caught(() => broker.subscribe(table, () => ack())), "SCHEMA");
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribing with options naming a dead-letter table that does not exist fails with SCHEMA`,
        async (fx) => {
          await fx.requireForm(form);
          const name = fx.uniqueName();
          // The table's own dead-letter table exists; the subscription's options name one that does not.
          const description = describeTable(form, name, {
            roles: ["attempt", "runAt"],
            maxAttempts: 2,
            deadLetter: { table: `${name}_dead` },
          });
          await fx.tableFrom(deadLetterDescription(description, `${name}_dead`));
          const table = await fx.tableFrom(description);
          fx.dropLater(defineTable(deadLetterDescription(description, `${name}_nowhere`)));
          const broker = await fx.broker();
          await broker.publish(table, "stays");
          expectCode(
            await caught(() =>
              broker.subscribe(table, () => ack(), {
                maxAttempts: 2,
                deadLetter: { table: `${name}_nowhere` },
                pollInterval: 20,
              }),
            ),
            "SCHEMA",
          );
          // Nothing claimed the row: it is still there, untouched.
          const rows = await fx.rows(table);
          expect(rows).toHaveLength(1);
          expect(toNumber(rows[0]?.[columnNames.attempt])).toBe(1);
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "a subscription on a server older than the driver's floor fails at startup with SERVER_TOO_OLD for every table the floor covers, and claims nothing",
      async (fx) => {
        const caps = await fx.capabilities();
        const older = harness.olderServer;
        if (older === undefined) {
          return fx.skip(
            `the ${harness.name} harness gives no olderServer, so no test can run the driver against a server below its floor`,
          );
        }
        const kinds: { readonly form: ClaimFormName; readonly fifo: boolean }[] = [
          ...caps.forms.map((form) => ({ form, fifo: false })),
          ...caps.fifo.filter((form) => caps.forms.includes(form)).map((form) => ({ form, fifo: true })),
        ];
        const current = await fx.broker();
        const outdated = fx.brokerOn(await older.createDriver());
        let refused = 0;
        for (const { form, fifo } of kinds) {
          const what = `a ${fifo ? "FIFO " : ""}${formLabels[form]} table on ${older.version}`;
          const table = await fx.table(form, { roles: ["attempt", "group"], fifo, lease: 5 });
          const group = fifo ? "g" : null;
          await current.publish(table, what, group === null ? {} : { group });
          const seen: Seen[] = [];
          const subscribing = caught(() =>
            outdated.subscribe(table, (delivery) => void see(seen, delivery), {
              pollInterval: 20,
              ...(group === null ? {} : { group }),
            }),
          );
          if (older.refuses(table)) {
            refused += 1;
            const error = await subscribing;
            const got = BrokerError.is(error) ? error.code : String(error);
            expect(
              BrokerError.is(error, "SERVER_TOO_OLD"),
              `${what}: expected SERVER_TOO_OLD, got ${got}`,
            ).toBe(true);
            const rows = await fx.rows(table);
            expect(
              toNumber(rows[0]?.[columnNames.attempt]),
              `${what}: the refused subscription claimed the row`,
            ).toBe(1);
          } else {
            expect(await subscribing, `${what}: the floor does not cover this table`).toBeUndefined();
            await waitFor(`${what}: the row to be delivered`, () => seen.length > 0);
          }
        }
        expect(
          refused,
          `${older.version} is below no floor of the ${harness.name} driver's tables`,
        ).toBeGreaterThan(0);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "publishing a payload the table cannot hold fails with INVALID_ARGUMENT and writes nothing",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0] ?? "lease";
        const text = await fx.table(form, { payloadType: "text", roles: ["attempt", "headers"] });
        const bytes = await fx.table(form, { payloadType: "bytes" });
        const json = await fx.table(form);
        const broker = await fx.broker();
        expectCode(await caught(() => broker.publish(text, 42)), "INVALID_ARGUMENT");
        expectCode(await caught(() => broker.publish(bytes, "not bytes")), "INVALID_ARGUMENT");
        expectCode(await caught(() => broker.publish(json, undefined)), "INVALID_ARGUMENT");
        expectCode(await caught(() => broker.publish(json, 10n)), "INVALID_ARGUMENT");
        expectCode(
          await caught(() =>
            broker.publish(text, "fine", { headers: { n: 1 } as unknown as Record<string, string> }),
          ),
          "INVALID_ARGUMENT",
        );
        // One bad message in a batch writes none of them.
        expectCode(
          await caught(() =>
            broker.publishMany(text, [{ payload: "good" }, { payload: 7 }, { payload: "also good" }]),
          ),
          "INVALID_ARGUMENT",
        );
        expectCode(await caught(() => broker.publish(json, "x", { group: "g" })), "INVALID_ARGUMENT");
        expect(await fx.rows(text)).toEqual([]);
        expect(await fx.rows(bytes)).toEqual([]);
        expect(await fx.rows(json)).toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "subscribe and publish on a closed broker fail with CLOSED",
      async (fx) => {
        const caps = await fx.capabilities();
        const table = await fx.table(caps.forms[0] ?? "lease");
        const broker = await fx.broker();
        await broker.close();
        expectCode(await caught(() => broker.subscribe(table, () => ack())), "CLOSED");
        expectCode(await caught(() => broker.publish(table, 1)), "CLOSED");
        expect(await fx.rows(table)).toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "a driver closed by a broker's close() refuses another broker's subscribe and publish with CLOSED",
      async (fx) => {
        const caps = await fx.capabilities();
        const table = await fx.table(caps.forms[0] ?? "lease");
        const driver =
          harness.pools === "user" ? (await fx.userPoolBroker()).pool.driver : await harness.createDriver();
        await fx.brokerOn(driver).close();
        const next = fx.brokerOn(driver);
        expectCode(await caught(() => next.subscribe(table, () => ack())), "CLOSED");
        expectCode(await caught(() => next.publish(table, 1)), "CLOSED");
        expect(await fx.rows(table)).toEqual([]);
      },
    );

    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a transactional handler whose settlement the database refuses logs the row as not settled, never as a handler that threw after settling it`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          if (!(caps.transactionalHandlers ?? []).includes(form)) {
            return fx.skip(
              `the ${harness.name} driver offers no transactional handlers in the ${formLabels[form]} form`,
            );
          }
          const refuse = harness.refuseProcessedAt?.bind(harness);
          if (refuse === undefined) {
            return fx.skip(
              `the ${harness.name} harness gives no refuseProcessedAt(), so no test can make the database refuse an ack`,
            );
          }
          const table = await fx.table(form, { lease: 2, roles: ["attempt", "processedAt"] });
          const allow = await refuse(table);
          const broker = await fx.broker();
          const [id] = await broker.publishMany(table, [{ payload: "refused" }]);
          // The handler lets the refusal through, as a handler that does not catch it does.
          await broker.subscribe(table, (delivery) => delivery.transaction(() => ack()), {
            pollInterval: 20,
            transactional: true,
          });
          // Every error logged about the row must say it was not settled: a failed settlement
          // (settled: false) or, where the driver reports the refusal as the body's (MariaDB's
          // CHECK failure is INVALID_ARGUMENT), a handler failure whose row is retried (next).
          const logged = () =>
            fx.log.filter((entry) => entry.level === "error" && String(entry.details?.id) === String(id));
          await waitFor("the failed settlement to be logged", () => logged().length > 0);
          await broker.close();
          await allow();
          for (const entry of logged()) {
            const details = entry.details ?? {};
            expect(BrokerError.is(details.err), "the logged error is not a rowclaim error").toBe(true);
            expect(
              details.settled === false || details.next !== undefined,
              "a refused settlement was logged as if the row had been settled",
            ).toBe(true);
          }
        },
      );
    }
  });
}
