/**
 * Interleavings: tests that build the state or the timing a rule is about instead of hoping a
 * busy run happens upon it. FIFO: every state in which the head of a group is not its first due
 * row (a head that sorts first by priority but is not due; retried with and without `runAt`;
 * failed, waiting out its backoff, then dead-lettered; a row of the group in work in another
 * process), each checked over claims counted through the driver's claimer, not over time.
 * Advisory lock: a claim held back between its candidates read and its take (through the
 * harness's `createObservedDriver`) while another broker settles the row; the take must not
 * take it again.
 *
 * @module
 */
import {
  ack,
  type Broker,
  type ClaimFormName,
  type RowId,
  retry,
  retryAfter,
  type TableDefinition,
} from "@rowclaim/core";
import { expect } from "vitest";
import { isStarted } from "./child-process.js";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { type CountedDriver, countAnswers, StatementLog } from "./observed.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames, fifoForms, type TableShape } from "./tables.js";
import { idKey, toNumber } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "interleavings";

/** How many claims a test lets a subscription answer before it asserts what they did not take. */
const CLAIMS_OBSERVED = 4;

/** An hour from now: a due time no test waits for (the test makes the row due itself). */
function inAnHour(): Date {
  return new Date(Date.now() + 3_600_000);
}

/** A broker on a new driver whose claimer calls are counted (closed after the test). */
async function countedBroker(fx: Fixture): Promise<{ broker: Broker; counted: CountedDriver }> {
  const counted = countAnswers(await fx.harness.createDriver());
  return { broker: fx.brokerOn(counted.driver), counted };
}

/** Waits until `counted` answered {@link CLAIMS_OBSERVED} more calls than it had when called. */
async function afterClaims(counted: CountedDriver, what: string): Promise<void> {
  const from = counted.answered();
  await waitFor(`${CLAIMS_OBSERVED} claims ${what}`, () => counted.answered() >= from + CLAIMS_OBSERVED);
}

/** Makes row `id` of `table` due now (`run_at = NULL`), as a second connection. */
async function makeDue(
  harness: ConformanceHarness,
  table: TableDefinition,
  id: RowId | undefined,
): Promise<void> {
  await harness.execute(
    `UPDATE ${table.name} SET ${columnNames.runAt} = NULL WHERE ${columnNames.id} = ${Number(id)}`,
  );
}

/** A FIFO table in `form` with attempt, runAt, priority and group (lease 5 s), `shape` added; skips where the driver keeps no FIFO groups in `form`. */
async function fifoTable(fx: Fixture, form: ClaimFormName, shape: TableShape = {}): Promise<TableDefinition> {
  await fx.requireFifo(form);
  return fx.table(form, { roles: ["attempt", "runAt", "priority", "group"], fifo: true, lease: 5, ...shape });
}

/** Publishes a head (priority 0) and a row behind it (priority 1) into group `g`; the head's id. */
async function publishHeadAndLater(broker: Broker, table: TableDefinition): Promise<RowId | undefined> {
  const [head] = await broker.publishMany(table, [
    { payload: "head", group: "g", priority: 0 },
    { payload: "later", group: "g", priority: 1 },
  ]);
  return head;
}

/** The payloads of `seen`, in the order their handlers started. */
const payloads = (seen: readonly Seen<string>[]): string[] => seen.map((s) => s.payload);

/** Registers the interleavings sub-suite. */
export function interleavingsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("interleavings", () => {
    for (const form of fifoForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a FIFO head that sorts first by priority but is not due holds back the due rows of its group`,
        async (fx) => {
          const table = await fifoTable(fx, form);
          const { broker, counted } = await countedBroker(fx);
          const [head] = await broker.publishMany(table, [
            { payload: "head", group: "g", priority: 0, runAt: inAnHour() },
            { payload: "later", group: "g", priority: 1 },
          ]);
          const seen: Seen<string>[] = [];
          await broker.subscribe<string>(table, (delivery) => void see(seen, delivery), {
            group: "g",
            workers: 2,
            pollInterval: 20,
          });
          await afterClaims(counted, "while the head is not due");
          expect(payloads(seen), "a claim took a row behind a head that is not due").toEqual([]);
          await makeDue(harness, table, head);
          await waitFor("both rows to be delivered once the head is due", () => seen.length >= 2);
          expect(payloads(seen)).toEqual(["head", "later"]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a FIFO head retried with retryAfter that still sorts first holds back its group until it is due`,
        async (fx) => {
          const table = await fifoTable(fx, form);
          const { broker, counted } = await countedBroker(fx);
          const head = await publishHeadAndLater(broker, table);
          const seen: Seen<string>[] = [];
          const subscription = await broker.subscribe<string>(
            table,
            (delivery) => {
              see(seen, delivery);
              return delivery.payload === "head" && delivery.attempt === 1 ? retryAfter(3_600_000) : ack();
            },
            { group: "g", workers: 2, pollInterval: 20 },
          );
          await waitFor("the head's retry to be settled", () => subscription.stats.retried >= 1);
          await afterClaims(counted, "while the retried head is not due");
          expect(payloads(seen), "a claim took a row behind a retried head that is not due").toEqual([
            "head",
          ]);
          await makeDue(harness, table, head);
          await waitFor("the head again, then the row behind it", () => seen.length >= 3);
          expect(payloads(seen)).toEqual(["head", "head", "later"]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] on a FIFO table without a runAt column, a head retried at once runs again before the rest of its group`,
        async (fx) => {
          await fx.requireFifo(form);
          const table = await fx.table(form, {
            roles: ["attempt", "priority", "group"],
            fifo: true,
            lease: 5,
          });
          const broker = await fx.broker();
          await broker.publishMany(table, [
            { payload: "head", group: "g", priority: 0 },
            { payload: "later", group: "g", priority: 1 },
            { payload: "last", group: "g", priority: 1 },
          ]);
          const seen: Seen<string>[] = [];
          await broker.subscribe<string>(
            table,
            (delivery) => {
              see(seen, delivery);
              return delivery.payload === "head" && delivery.attempt < 3 ? retry() : ack();
            },
            { group: "g", workers: 3, pollInterval: 20 },
          );
          await waitFor("every delivery", () => seen.length >= 5);
          expect(payloads(seen)).toEqual(["head", "head", "head", "later", "last"]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a FIFO head waiting out its backoff holds back its group; dead-lettered, it lets the next row run`,
        async (fx) => {
          const table = await fifoTable(fx, form, { maxAttempts: 2, deadLetter: { group: "g-dead" } });
          const { broker, counted } = await countedBroker(fx);
          const head = await publishHeadAndLater(broker, table);
          const seen: Seen<string>[] = [];
          const subscription = await broker.subscribe<string>(
            table,
            (delivery) => {
              see(seen, delivery);
              if (delivery.payload === "head") throw new Error("the head fails every time");
            },
            { group: "g", workers: 2, pollInterval: 20, backoff: { baseMs: 3_600_000 } },
          );
          await waitFor("the head's first failure to be settled", () => subscription.stats.retried >= 1);
          await afterClaims(counted, "while the failed head waits out its backoff");
          expect(payloads(seen), "a claim took a row behind a head waiting out its backoff").toEqual([
            "head",
          ]);
          await makeDue(harness, table, head);
          await waitFor("the head's last attempt, then the row behind it", () => seen.length >= 3);
          expect(payloads(seen)).toEqual(["head", "head", "later"]);
          await waitFor("the head to be dead-lettered into its group", async () => {
            const rows = await fx.rows(table);
            return rows.length === 1 && rows[0]?.[columnNames.group] === "g-dead";
          });
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] while a row of a FIFO group is in work in another process, a row published ahead of it waits`,
        async (fx) => {
          await fx.requireFifo(form);
          fx.requireChildren();
          const table = await fx.table(form, {
            roles: ["attempt", "runAt", "priority", "group"],
            fifo: true,
            lease: 1,
          });
          const { broker, counted } = await countedBroker(fx);
          await broker.publish(table, "in work", { group: "g", priority: 5 });
          const child = fx.child({
            table: table.description,
            mode: "hang",
            subscribe: { group: "g", workers: 1, pollInterval: 20 },
          });
          await child.next("that it took the row", isStarted);
          // Published after the row in work, sorting before it: the group's new head, due, and
          // still not to run while a row of its group is in work.
          await broker.publishMany(table, [
            { payload: "ahead", group: "g", priority: 0 },
            { payload: "behind", group: "g", priority: 9 },
          ]);
          const seen: Seen<string>[] = [];
          await broker.subscribe<string>(table, (delivery) => void see(seen, delivery), {
            group: "g",
            workers: 2,
            pollInterval: 20,
          });
          await afterClaims(counted, "while a row of the group is in work in another process");
          expect(
            payloads(seen),
            "a claim took a row of a group while another process had one in work",
          ).toEqual([]);
          child.kill("SIGKILL");
          await waitFor("every row once the other process is gone", () => seen.length >= 3, {
            timeoutMs: 30_000,
          });
          expect(payloads(seen)).toEqual(["ahead", "in work", "behind"]);
        },
      );
    }

    for (const settled of ["acked", "retried for later"] as const) {
      conformanceTest(
        harness,
        SUITE,
        `[advisory] a row ${settled} elsewhere between a claim's candidates read and its take is not taken again`,
        async (fx) => {
          await fx.requireForm("advisory");
          const observe = harness.createObservedDriver?.bind(harness);
          if (observe === undefined) {
            return fx.skip(
              `the ${harness.name} harness gives no createObservedDriver(), so no test can hold a claim between its statements`,
            );
          }
          const table = await fx.table("advisory", { roles: ["attempt", "runAt", "processedAt"] });
          const log = new StatementLog();
          fx.releaseFirst(async () => log.resumeAll());
          const counted = countAnswers(await observe(log));
          const paused = fx.brokerOn(counted.driver);
          const other = await fx.broker();
          const seen: Seen<string>[] = [];
          await paused.subscribe<string>(table, (delivery) => void see(seen, delivery), {
            workers: 2,
            pollInterval: 20,
          });
          // The next key lock the paused broker sends is its claim's, for the row published now.
          const held = log.holdNext(/\b(pg_try_advisory_lock|get_lock)\s*\(/i);
          const [id] = await other.publishMany(table, [{ payload: "contested" }]);
          await held.reached;
          const answeredAtPause = counted.answered();
          // Another broker takes the row and settles it while the first claim waits at its take.
          const elsewhere: Seen<string>[] = [];
          await other.subscribe<string>(
            table,
            (delivery) => {
              see(elsewhere, delivery);
              return settled === "acked" ? ack() : retryAfter(3_600_000);
            },
            { pollInterval: 20 },
          );
          await waitFor("the other broker to settle the row", async () => {
            const [row] = await fx.rows(table);
            return (
              elsewhere.length > 0 &&
              row !== undefined &&
              (settled === "acked"
                ? row[columnNames.processedAt] !== null
                : toNumber(row[columnNames.attempt]) === 2 && row[columnNames.runAt] !== null)
            );
          });
          await other.close();
          held.resume();
          await waitFor("the held take to be answered", () => held.answered);
          // The claim that sent it, and the next one, have returned: whatever they took was delivered.
          await waitFor(
            "two more claims of the held broker",
            () => counted.answered() >= answeredAtPause + 2,
          );
          expect(
            seen.map((s) => s.id),
            `the held take took row ${String(id)} after it was ${settled} elsewhere`,
          ).toEqual([]);
          const [row] = await fx.rows(table);
          expect(toNumber(row?.[columnNames.attempt]), "the take counted an attempt on a settled row").toBe(
            2,
          );
          expect(idKey(row?.[columnNames.id] as RowId)).toBe(idKey(id ?? 0));
        },
      );
    }
  });
}
