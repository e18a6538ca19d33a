/**
 * Declarations: every description (and subscription option) that cannot work is refused with a
 * DeclarationError before anything touches the database. (A table naming an isolation level or
 * mode the driver does not take is refused at subscribe: the transactions sub-suite checks each
 * level and mode both ways.)
 *
 * @module
 */
import { ack, defineTable, type TableDescription } from "@rowclaim/core";
import { caught, expectCode } from "./assertions.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { describeTable } from "./tables.js";

const SUITE = "declaration";

const base = (name: string): TableDescription =>
  describeTable("rowLock", name, { roles: ["attempt", "runAt", "group"] });

/** Descriptions the spec refuses, each with the reason as the test names it. */
const refusals: readonly { readonly title: string; readonly make: (name: string) => TableDescription }[] = [
  {
    title: "both lockedUntil and advisoryLock",
    make: (name) => ({ ...describeTable("lease", name), advisoryLock: `${name}-{id}` }),
  },
  {
    title: "an advisory key placeholder naming no column",
    make: (name) => ({ ...base(name), advisoryLock: `${name}-{nowhere}` }),
  },
  {
    title: "fifo beside advisoryLock",
    make: (name) => ({ ...base(name), advisoryLock: `${name}-{queue}`, fifo: true }),
  },
  { title: "maxAttempts without deadLetter", make: (name) => ({ ...base(name), maxAttempts: 3 }) },
  {
    title: "deadLetter without maxAttempts",
    make: (name) => ({ ...base(name), deadLetter: { group: "dead" } }),
  },
  {
    title: "maxAttempts without an attempt column",
    make: (name) => ({
      ...describeTable("rowLock", name, { roles: ["group"] }),
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    }),
  },
  { title: "a lease under one second", make: (name) => ({ ...describeTable("lease", name), lease: 0.5 }) },
  {
    title: "fifo without a group column",
    make: (name) => ({ ...describeTable("rowLock", name), fifo: true }),
  },
  {
    title: "a dead-letter group without a group column",
    make: (name) => ({ ...describeTable("rowLock", name), maxAttempts: 3, deadLetter: { group: "dead" } }),
  },
  { title: "a column named for two roles", make: (name) => ({ name, columns: { id: "id", payload: "id" } }) },
  {
    title: "an unknown isolation level",
    make: (name) => ({ ...base(name), isolation: "chaos" as TableDescription["isolation"] }),
  },
  {
    title: "no payload column",
    make: (name) => ({ name, columns: { id: "id" } as TableDescription["columns"] }),
  },
];

/** Registers the declaration sub-suite. */
export function declarationSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("declarations", () => {
    for (const { title, make } of refusals) {
      conformanceTest(
        harness,
        SUITE,
        `a description with ${title} is refused with DECLARATION`,
        async (fx) => {
          expectCode(await caught(() => defineTable(make(fx.uniqueName()))), "DECLARATION");
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "subscribe options with maxAttempts but no deadLetter are refused with DECLARATION",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0] ?? "lease";
        const table = defineTable(describeTable(form, fx.uniqueName(), { roles: ["attempt", "group"] }));
        const broker = await fx.broker();
        expectCode(
          await caught(() => broker.subscribe(table, () => ack(), { maxAttempts: 2 })),
          "DECLARATION",
        );
        expectCode(await caught(() => broker.subscribe(table, () => ack(), { workers: 0 })), "DECLARATION");
      },
    );
  });
}
