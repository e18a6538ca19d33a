/**
 * Operations (core `operations.ts`, the driver's `operations` capability): cancel of queued rows
 * and of rows in work (reported, untouched, still handled once) in every form; redrive of dead
 * rows back to the queue, attempt reset, handled once, in order, in bounded batches; prune of
 * processed rows older than a period only, in batches, one process at a time; and bad input
 * refused with `INVALID_ARGUMENT`, nothing written. Skipped for a driver without the capability.
 *
 * @module
 */
import {
  ack,
  type Broker,
  BrokerError,
  cancel,
  countRows,
  deadLetter,
  defineTable,
  listRows,
  prune,
  redrive,
  rowDetail,
  type TableDefinition,
} from "@rowclaim/core";
import { expect } from "vitest";
import { countById, type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import { subscribeGated } from "./gated.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames, deadLetterDescription, describeTable } from "./tables.js";
import { idKey, isNull, toNumber } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "ops";

/** A row's JSON payload as a value, whether the client parsed the column or returned its text. */
function payloadOf(row: Record<string, unknown>): unknown {
  const value = row[columnNames.payload];
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** A broker whose driver offers operations, or the test skipped saying so. */
async function operationsBroker(fx: Fixture): Promise<Broker> {
  const broker = await fx.broker();
  if (broker.driver.operations === undefined) {
    fx.skip(`the ${fx.harness.name} driver offers no operations capability`);
  }
  return broker;
}

async function expectInvalid(what: string, run: () => Promise<unknown>): Promise<void> {
  const error = await run().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(BrokerError.is(error, "INVALID_ARGUMENT"), `${what}: ${String(error)}`).toBe(true);
}

/** Dead-letters every row of `table`'s group `work` through a subscription, then closes it. */
async function killAll(
  fx: Fixture,
  table: TableDefinition,
  count: number,
  deadRows: () => Promise<number>,
): Promise<void> {
  const broker = await fx.broker();
  const subscription = await broker.subscribe(table, () => deadLetter(), {
    group: "work",
    workers: 1,
    batch: 1,
    pollInterval: 20,
  });
  await waitFor("every row dead-lettered", async () => (await deadRows()) === count);
  await subscription.stop();
}

/** Registers the operations sub-suite. */
export function operationsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("operations", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] cancel deletes a queued row and reports ids that match no queued row`,
        async (fx) => {
          await fx.requireForm(form);
          const broker = await operationsBroker(fx);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "priority"] });
          const [first, second] = await broker.publishMany(table, [
            { payload: 1 },
            { payload: 2, runAt: new Date(Date.now() + 3600_000) },
          ]);
          if (first === undefined || second === undefined)
            throw new Error("publishMany returned too few ids");
          const result = await cancel(broker, table, { ids: [first, second, 987654] });
          expect(result.changed.map(idKey).sort()).toEqual([idKey(first), idKey(second)].sort());
          expect(result.inWork).toEqual([]);
          expect(result.missing.map(idKey)).toEqual(["987654"]);
          expect(await fx.rows(table)).toEqual([]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] cancel of a row in work reports it, leaves it untouched, and it is handled once`,
        async (fx) => {
          await fx.requireForm(form);
          const broker = await operationsBroker(fx);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "processedAt"], lease: 5 });
          const [busy] = await broker.publishMany(table, [{ payload: 1 }]);
          if (busy === undefined) throw new Error("publishMany returned too few ids");
          const gated = await subscribeGated(fx, broker, table, { workers: 1, batch: 1, pollInterval: 20 });
          await waitFor("the row in work", () => gated.seen.length === 1);
          const other = await fx.broker();
          const result = await cancel(other, table, { ids: [busy] });
          expect(result.changed).toEqual([]);
          expect(result.inWork.map(idKey)).toEqual([idKey(busy)]);
          const detail = await rowDetail(other, table, busy);
          expect(detail?.state).toBe("inWork");
          expect((await fx.rows(table)).length).toBe(1);
          gated.release.open();
          await waitFor("the row processed", async () =>
            (await fx.rows(table)).every((row) => !isNull(row[columnNames.processedAt])),
          );
          expect(countById(gated.seen).get(idKey(busy))).toBe(1);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] listRows pages rows by state and search, and rowDetail says what holds a row in work`,
        async (fx) => {
          await fx.requireForm(form);
          const broker = await operationsBroker(fx);
          const table = await fx.table(form, { roles: ["attempt", "runAt"], lease: 5 });
          const busy = await broker.publish(table, "busy");
          const gated = await subscribeGated(fx, broker, table, { workers: 1, batch: 1, pollInterval: 20 });
          await waitFor("the row in work", () => gated.seen.length === 1);
          const due = await broker.publish(table, "due-row");
          const later = await broker.publish(table, "later-row", { runAt: new Date(Date.now() + 3600_000) });
          const other = await fx.broker();
          const ids = async (state: "due" | "delayed" | "inWork"): Promise<string[]> =>
            (await listRows(other, table, { state })).rows.map((row) => idKey(row.id));
          expect(await ids("inWork")).toEqual([idKey(busy)]);
          expect(await ids("due")).toEqual([idKey(due)]);
          expect(await ids("delayed")).toEqual([idKey(later)]);
          const all = await listRows(other, table);
          expect(all.rows.map((row) => row.state)).toEqual(["inWork", "due", "delayed"]);
          const found = await listRows(other, table, { filter: { text: "later" } });
          expect(found.rows.map((row) => row.payload)).toEqual(["later-row"]);
          const first = await listRows(other, table, { limit: 2 });
          expect(first.rows.length).toBe(2);
          expect(first.next).toBeDefined();
          const rest = await listRows(other, table, {
            limit: 2,
            ...(first.next === undefined ? {} : { after: first.next }),
          });
          expect(rest.rows.map((row) => idKey(row.id))).toEqual([idKey(later)]);
          expect(rest.next).toBeUndefined();
          expect((await countRows(other, table, { state: "due" })).count).toBe(1);
          const detail = await rowDetail(other, table, busy);
          expect(detail?.state).toBe("inWork");
          expect(detail?.holder?.kind).toBe(
            form === "lease" ? "lease" : form === "rowLock" ? "rowLock" : "advisoryKey",
          );
          expect(detail?.payload).toBe("busy");
          gated.release.open();
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] redrive returns dead rows to the queue in bounded batches, attempt reset, handled once and in order`,
        async (fx) => {
          await fx.requireForm(form);
          const operations = await operationsBroker(fx);
          const table = await fx.table(form, {
            roles: ["attempt", "runAt", "group"],
            maxAttempts: 5,
            deadLetter: { group: "dead" },
          });
          const count = 5;
          await operations.publishMany(
            table,
            Array.from({ length: count }, (_, n) => ({ payload: n, group: "work" })),
          );
          const dead = async (): Promise<number> =>
            (await fx.rows(table)).filter((row) => row[columnNames.group] === "dead").length;
          await killAll(fx, table, count, dead);
          const page = await listRows(operations, table, { state: "dead" });
          expect(page.rows.length).toBe(count);
          const progress: number[] = [];
          const result = await redrive(
            operations,
            table,
            { all: true },
            {
              batchSize: 2,
              onProgress: (p) => progress.push(p.done),
            },
          );
          expect(result.redriven).toBe(count);
          expect(progress[progress.length - 1]).toBe(count);
          expect(progress.every((done, i) => i === 0 || done - (progress[i - 1] ?? 0) <= 2)).toBe(true);
          const rows = await fx.rows(table);
          for (const row of rows) {
            expect(isNull(row[columnNames.group]), "back in the NULL group").toBe(true);
            expect(toNumber(row[columnNames.attempt])).toBe(1);
          }
          const seen: Seen[] = [];
          await operations.subscribe(
            table,
            (delivery) => {
              see(seen, delivery);
              return ack();
            },
            { workers: 1, batch: 1, pollInterval: 20 },
          );
          await waitFor("every redriven row handled", async () => (await fx.rows(table)).length === 0);
          expect(seen.map((s) => s.payload)).toEqual(Array.from({ length: count }, (_, n) => n));
          expect(seen.every((s) => s.attempt === 1)).toBe(true);
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "cancel by key deletes the queued row of each key and reports keys no queued row holds",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms.find((candidate) => candidate !== "rowLock");
        if (form === undefined)
          return fx.skip("the driver offers neither the lease nor the advisory lock form");
        const broker = await operationsBroker(fx);
        if (broker.driver.publishUnique === undefined)
          return fx.skip(
            `the ${fx.harness.name} driver has no unique jobs (publishUnique), so no table has a key column`,
          );
        const table = await fx.table(form, { roles: ["attempt", "runAt", "key"] });
        const first = await broker.publish(table, 1, {
          key: "first",
          runAt: new Date(Date.now() + 3600_000),
        });
        await broker.publish(table, 2, { key: "second", runAt: new Date(Date.now() + 3600_000) });
        const result = await cancel(broker, table, { keys: ["first", "none"] });
        expect(result.changed.map(idKey)).toEqual([idKey(first.id)]);
        expect(result.inWork).toEqual([]);
        expect(result.missing).toEqual(["none"]);
        const page = await listRows(broker, table, { filter: { keys: ["second"] } });
        expect(page.rows.map((row) => row.key)).toEqual(["second"]);
        expect((await fx.rows(table)).length).toBe(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "redrive from a dead-letter table moves the rows back into the table, in order, and deletes them there",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0];
        if (form === undefined) return fx.skip("the driver offers no form");
        const operations = await operationsBroker(fx);
        const name = fx.uniqueName();
        const deadName = `${name}_dl`;
        const description = describeTable(form, name, {
          roles: ["attempt", "runAt"],
          maxAttempts: 5,
          deadLetter: { table: deadName },
        });
        const deadTable = await fx.tableFrom(deadLetterDescription(description, deadName));
        const table = await fx.tableFrom(description);
        await operations.publishMany(
          table,
          Array.from({ length: 3 }, (_, n) => ({ payload: n })),
        );
        const broker = await fx.broker();
        const subscription = await broker.subscribe(table, () => deadLetter(), {
          workers: 1,
          batch: 1,
          pollInterval: 20,
        });
        await waitFor(
          "every row in the dead-letter table",
          async () => (await fx.rows(deadTable)).length === 3,
        );
        await subscription.stop();
        const result = await redrive(operations, table, { filter: { text: "1" } });
        expect(result.redriven).toBe(1);
        const rest = await redrive(operations, table, { all: true }, { batchSize: 1 });
        expect(rest.redriven).toBe(2);
        expect(await fx.rows(deadTable)).toEqual([]);
        const rows = await fx.rows(table);
        expect(rows.map((row) => payloadOf(row))).toEqual([1, 0, 2]);
        expect(rows.every((row) => toNumber(row[columnNames.attempt]) === 1)).toBe(true);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "prune deletes only processed rows older than the period, in batches, and not while another prune runs",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0];
        if (form === undefined) return fx.skip("the driver offers no form");
        const broker = await operationsBroker(fx);
        const table = await fx.table(form, { roles: ["attempt", "runAt", "processedAt"] });
        const subscription = await broker.subscribe(table, () => ack(), { workers: 1, pollInterval: 20 });
        const processed = async (): Promise<number> =>
          (await fx.rows(table)).filter((row) => !isNull(row[columnNames.processedAt])).length;
        await broker.publishMany(table, [{ payload: "old" }, { payload: "old" }, { payload: "old" }]);
        await waitFor("the old rows processed", async () => (await processed()) === 3);
        const cutoff = Date.now() + 200;
        await waitFor("the clock past the cutoff", () => Date.now() > cutoff + 200);
        await broker.publishMany(table, [{ payload: "new" }, { payload: "new" }]);
        await waitFor("the new rows processed", async () => (await processed()) === 5);
        await subscription.stop();
        await broker.publish(table, "queued", { runAt: new Date(Date.now() + 3600_000) });

        const other = await fx.broker();
        const ops = other.driver.operations;
        if (ops === undefined) throw new Error("the driver lost its operations capability");
        const lock = await ops.lockPrune(table);
        expect(lock).not.toBeNull();
        const blocked = await prune(broker, table, { olderThan: Date.now() - cutoff });
        expect(blocked).toEqual({ ran: false, deleted: 0, batches: 0 });
        await lock?.release();

        const result = await prune(broker, table, { olderThan: Date.now() - cutoff, batchSize: 2 });
        expect(result.ran).toBe(true);
        expect(result.deleted).toBe(3);
        const left = await fx.rows(table);
        expect(left.map((row) => payloadOf(row))).toEqual(["new", "new", "queued"]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "bad input is refused with INVALID_ARGUMENT and writes nothing",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0];
        if (form === undefined) return fx.skip("the driver offers no form");
        const broker = await operationsBroker(fx);
        const table = await fx.table(form, { roles: ["attempt", "runAt"] });
        await broker.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
        const before = await fx.rows(table);
        const ids = before.map((row) => row[columnNames.id] as number);
        await expectInvalid("an unknown filter field", () =>
          listRows(broker, table, { filter: { payload: "x" } as never }),
        );
        await expectInvalid("an unknown selection field", () =>
          cancel(broker, table, { ids, extra: 1 } as never),
        );
        await expectInvalid("an empty selection", () => cancel(broker, table, { ids: [] }));
        await expectInvalid("keys on a table without a key column", () =>
          cancel(broker, table, { keys: ["a"] }),
        );
        await expectInvalid("a negative batch size", () => cancel(broker, table, { ids }, { batchSize: -1 }));
        await expectInvalid("redrive without a dead letter", () => redrive(broker, table, { all: true }));
        await expectInvalid("prune without processedAt", () => prune(broker, table, { olderThan: 0 }));
        const withProcessed = await fx.table(form, { roles: ["processedAt"] });
        await expectInvalid("a negative period", () => prune(broker, withProcessed, { olderThan: -1 }));
        await expectInvalid("a zero batch size", () =>
          prune(broker, withProcessed, { olderThan: 0, batchSize: 0 }),
        );
        const dead = defineTable({
          ...table.description,
          columns: { ...table.columns, group: columnNames.group },
          maxAttempts: 2,
          deadLetter: { group: "dead" },
        });
        await expectInvalid("an unknown redrive filter field", () =>
          redrive(broker, dead, { filter: { group: "x" } as never }),
        );
        expect(await fx.rows(table)).toEqual(before);
      },
    );
  });
}
