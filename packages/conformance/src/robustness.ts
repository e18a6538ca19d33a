/**
 * Correctness under pressure and hostile input, found by trying rowclaim from outside: a key
 * with many rows in work does not hold back other keys; a settlement that changed nothing never
 * reports success; the longest lease works and a longer one is refused; misspelled options and
 * malformed text are refused rather than silently accepted; a write that breaks a constraint
 * reaches the caller as CONSTRAINT with nothing lost.
 *
 * @module
 */
import { ack, type Delivery, deadLetter, defineTable } from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames, deadLetterDescription, describeTable } from "./tables.js";
import { idKey } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "robust";

/**
 * The longest lease core accepts, in seconds (`MAX_LEASE_SECONDS`): half of it in milliseconds
 * is the largest whole-second value a Node timer holds (2^31 − 1 ms).
 */
const LONGEST_LEASE_SECONDS = 4_294_967;

/** More rows of one key than a claim reading a fixed window of candidates in claim order would pass. */
const BUSY_KEY_ROWS = 300;

/** Registers the robustness sub-suite. */
export function robustnessSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("robustness", () => {
    conformanceTest(
      harness,
      SUITE,
      "[advisory] a key in work with many rows queued does not hold back the rows of other keys queued behind them",
      async (fx) => {
        await fx.requireForm("advisory");
        const table = await fx.table("advisory", { keyColumn: "account", extraColumns: ["account"] });
        const broker = await fx.broker();
        await broker.publishMany(
          table,
          Array.from({ length: BUSY_KEY_ROWS }, (_, n) => ({
            payload: { account: "busy", n },
            values: { account: "busy" },
          })),
        );
        await broker.publishMany(
          table,
          Array.from({ length: 5 }, (_, n) => ({
            payload: { account: "other", n },
            values: { account: "other" },
          })),
        );
        // The busy key's handler stays in work until every row of the other key is handled: a
        // claim that never passes over the busy key's rows never reaches them.
        const othersDone = fx.gate();
        let busyInWork = 0;
        let busyWhenOthersDone = 0;
        let othersHandled = 0;
        await broker.subscribe<{ account: string }>(
          table,
          async (delivery) => {
            if (delivery.payload.account === "busy") {
              busyInWork += 1;
              await othersDone.opened;
              return ack();
            }
            othersHandled += 1;
            if (othersHandled === 5) {
              busyWhenOthersDone = busyInWork;
              othersDone.open();
            }
            return ack();
          },
          { workers: 2, pollInterval: 20 },
        );
        await waitFor("a row of the busy key to be in work", () => busyInWork > 0);
        await waitFor("every row of the other key to be handled and acked", async () => {
          if (othersHandled < 5) return false;
          const rows = await fx.rows(table);
          return rows.every((row) => row.account === "busy");
        });
        expect(busyWhenOthersDone, "rows of the busy key in work while the other key ran").toBe(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] a settlement that finds its row gone fails with LEASE_LOST instead of reporting success",
      async (fx) => {
        await fx.requireForm("advisory");
        const table = await fx.table("advisory");
        const broker = await fx.broker();
        const outcome: { error?: unknown; settled?: boolean } = {};
        await broker.subscribe(
          table,
          async (delivery) => {
            // The row disappears while the key is held (an operator's DELETE): the settlement changes nothing.
            await harness.execute(
              `DELETE FROM ${table.name} WHERE ${columnNames.id} = ${idKey(delivery.id)}`,
            );
            try {
              await delivery.settle(ack());
              outcome.settled = true;
            } catch (error) {
              outcome.error = error;
            }
          },
          { pollInterval: 20 },
        );
        await broker.publish(table, "vanishing");
        await waitFor("the settlement to end", () => outcome.settled === true || outcome.error !== undefined);
        expectCode(outcome.error, "LEASE_LOST");
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] a table with the longest lease claims and settles its rows; one second longer is refused with DECLARATION",
      async (fx) => {
        await fx.requireForm("lease");
        const longer = caught(() =>
          defineTable(describeTable("lease", fx.uniqueName(), { lease: LONGEST_LEASE_SECONDS + 1 })),
        );
        expectCode(await longer, "DECLARATION");
        const table = await fx.table("lease", { lease: LONGEST_LEASE_SECONDS });
        const broker = await fx.broker();
        const expiries: (Date | undefined)[] = [];
        await broker.subscribe(
          table,
          (delivery) => {
            expiries.push(delivery.leaseExpiry);
            return ack();
          },
          { pollInterval: 20 },
        );
        await broker.publish(table, "long lease");
        await waitFor(
          "the row to be delivered and acked",
          async () => expiries.length > 0 && (await fx.rows(table)).length === 0,
        );
        const expiry = expiries[0]?.getTime() ?? 0;
        expect(expiry - Date.now()).toBeGreaterThan((LONGEST_LEASE_SECONDS - 3600) * 1000);
        expect(fx.log.filter((entry) => entry.level === "error")).toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[publish] a misspelled publish option is refused with INVALID_ARGUMENT and writes nothing",
      async (fx) => {
        const table = await fx.table((await fx.capabilities()).forms[0] ?? "lease");
        const broker = await fx.broker();
        expectCode(
          await caught(() => broker.publish(table, "x", { priorty: 1 } as unknown as { priority: number })),
          "INVALID_ARGUMENT",
        );
        expectCode(
          await caught(() =>
            broker.publishMany(table, [
              { payload: "y", runat: new Date() } as unknown as { payload: string },
            ]),
          ),
          "INVALID_ARGUMENT",
        );
        expect(await fx.rows(table)).toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[subscribe] a misspelled subscribe option or a workers count given as a string is refused with DECLARATION",
      async (fx) => {
        const table = await fx.table((await fx.capabilities()).forms[0] ?? "lease");
        const broker = await fx.broker();
        expectCode(
          await caught(() =>
            broker.subscribe(table, () => ack(), { worker: 2 } as unknown as { workers: number }),
          ),
          "DECLARATION",
        );
        expectCode(
          await caught(() => broker.subscribe(table, () => ack(), { workers: "4" as unknown as number })),
          "DECLARATION",
        );
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[payload] a text payload holding a lone surrogate is refused with INVALID_ARGUMENT and writes nothing",
      async (fx) => {
        const table = await fx.table((await fx.capabilities()).forms[0] ?? "lease", { payloadType: "text" });
        const broker = await fx.broker();
        expectCode(await caught(() => broker.publish(table, "half \ud800 a pair")), "INVALID_ARGUMENT");
        expectCode(await caught(() => broker.publish(table, "\udc00 low first")), "INVALID_ARGUMENT");
        await broker.publish(table, "a whole pair \ud83d\ude00");
        const rows = await fx.rows(table);
        expect(rows.map((row) => String(row[columnNames.payload]))).toEqual(["a whole pair \ud83d\ude00"]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[publish] a publish whose value breaks a unique index fails with CONSTRAINT and writes nothing",
      async (fx) => {
        const table = await fx.table((await fx.capabilities()).forms[0] ?? "lease", {
          extraColumns: ["account"],
        });
        // Unquoted names: the suite's table names are lower-case letters, digits and underscores.
        await harness.execute(`CREATE UNIQUE INDEX ${table.name}_acct ON ${table.name} (account)`);
        const broker = await fx.broker();
        await broker.publish(table, "first", { values: { account: "taken" } });
        expectCode(
          await caught(() => broker.publish(table, "second", { values: { account: "taken" } })),
          "CONSTRAINT",
        );
        expect(await fx.rows(table)).toHaveLength(1);
      },
    );

    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a dead-letter settlement that breaks a constraint of the dead-letter table fails with CONSTRAINT and loses no row`,
        async (fx) => {
          await fx.requireForm(form);
          const name = fx.uniqueName();
          const shape = {
            extraColumns: ["account"],
            maxAttempts: 5,
            deadLetter: { table: `${name}_dead` },
            lease: 5,
          } as const;
          const description = describeTable(form, name, shape);
          const dead = await fx.tableFrom(deadLetterDescription(description, `${name}_dead`));
          const table = await fx.tableFrom(description);
          await harness.execute(`CREATE UNIQUE INDEX ${dead.name}_acct ON ${dead.name} (account)`);
          const broker = await fx.broker();
          await broker.publishMany(table, [
            { payload: 1, values: { account: "same" } },
            { payload: 2, values: { account: "same" } },
          ]);
          const errors: unknown[] = [];
          const moved: Delivery[] = [];
          const tried = new Set<string>();
          const hold = fx.gate();
          await broker.subscribe(
            table,
            async (delivery) => {
              // A row whose move failed comes back (at once in the row lock and advisory lock
              // forms): hold it in work rather than fail again in a loop.
              if (tried.has(idKey(delivery.id))) return hold.opened;
              tried.add(idKey(delivery.id));
              try {
                await delivery.settle(deadLetter());
                moved.push(delivery);
              } catch (error) {
                errors.push(error);
              }
            },
            { pollInterval: 20 },
          );
          await waitFor(
            "one row to move and the other's move to fail",
            () => moved.length + errors.length >= 2,
          );
          expect(moved).toHaveLength(1);
          expectCode(errors[0], "CONSTRAINT");
          // The row whose move failed stays in the table (released, or claimable once its claim ends).
          expect(await fx.rows(table)).toHaveLength(1);
          expect(await fx.rows(dead)).toHaveLength(1);
        },
      );
    }
  });
}
