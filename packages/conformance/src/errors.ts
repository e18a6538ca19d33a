/**
 * Refusals with stable codes: UNSUPPORTED_FORM for a form (or FIFO guard) the driver does not
 * offer, SCHEMA for a missing table or column, INVALID_ARGUMENT for a payload the table cannot
 * hold (writing nothing), CLOSED after close.
 *
 * @module
 */
import { ack, defineTable, type TableDescription } from "@rowclaim/core";
import { describe, expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceTest, optOutCheck } from "./registry.js";
import { allForms, deadLetterDescription, describeTable, fifoForms, formLabels } from "./tables.js";

const SUITE = "errors";

/** Registers the errors sub-suite. */
export function errorsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  describe("errors", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribing to a table in the ${formLabels[form]} form the driver does not offer fails with UNSUPPORTED_FORM`,
        async (fx) => {
          const caps = await fx.capabilities();
          if (caps.forms.includes(form))
            return fx.skip(`the ${harness.name} driver offers the ${formLabels[form]} form`);
          const table = defineTable(describeTable(form, fx.uniqueName()));
          const broker = await fx.broker();
          expectCode(await caught(() => broker.subscribe(table, () => ack())), "UNSUPPORTED_FORM");
        },
      );
    }

    for (const form of fifoForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] subscribing to a FIFO table in the ${formLabels[form]} form the driver does not guard fails with UNSUPPORTED_FORM`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          if (caps.fifo.includes(form))
            return fx.skip(`the ${harness.name} driver keeps FIFO groups in the ${formLabels[form]} form`);
          const table = defineTable(
            describeTable(form, fx.uniqueName(), { roles: ["attempt", "group"], fifo: true }),
          );
          const broker = await fx.broker();
          expectCode(
            await caught(() => broker.subscribe(table, () => ack(), { group: "g" })),
            "UNSUPPORTED_FORM",
          );
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
    }

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
  });
}
