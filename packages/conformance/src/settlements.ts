/**
 * Coalesced settlements: acks that become ready together may reach the database as one
 * statement (a row lock batch's `endBatch`, core's optional lease `settleMany`), yet each
 * `delivery.settle()` still resolves only once its own row's outcome is committed, a lease row
 * taken over fails with `LEASE_LOST` alone while the rows settled with it succeed, nothing is
 * settled twice, and a settlement the database refuses fails the deliveries it carried and
 * leaves their rows to be claimed again.
 *
 * @module
 */
import { ack, BrokerError, type Delivery, type TableDefinition } from "@rowclaim/core";
import { expect } from "vitest";
import { caught } from "./assertions.js";
import { countById, type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames } from "./tables.js";
import { idKey, isNull } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "settle";

/**
 * How many deliveries settle at once. Ten, not more: the advisory lock form holds a connection
 * per delivery in work (plus one for claims), and the first-party harnesses' pools hold twelve.
 */
const AT_ONCE = 10;

/** What one handler saw when its `settle()` returned. */
interface Settled {
  readonly id: string;
  /** The settlement's error, `undefined` when it resolved. */
  readonly error: unknown;
  /** The row as a second connection read it right after `settle()` resolved (`undefined`: gone). */
  readonly rowAfter: Record<string, unknown> | undefined;
}

/** Acks `delivery`, then reads its row from a second connection as soon as `settle()` returned. */
async function ackAndReadBack(fx: Fixture, table: TableDefinition, delivery: Delivery): Promise<Settled> {
  const error = await caught(() => delivery.settle(ack()));
  const id = idKey(delivery.id);
  const rowAfter = (await fx.rows(table)).find((row) => idKey(row[columnNames.id]) === id);
  return { id, error, rowAfter };
}

/** Registers the coalesced settlements sub-suite. */
export function settlementsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("coalesced settlements", () => {
    for (const form of allForms) {
      for (const finish of ["delete", "markProcessed"] as const) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] ${AT_ONCE} deliveries acked at once (${finish === "delete" ? "deleting" : "setting processedAt"}) each resolve only once their row is committed, each settled once, counters and events matching`,
          async (fx) => {
            await fx.requireForm(form);
            const table = await fx.table(form, {
              lease: 30,
              roles: finish === "delete" ? ["attempt", "runAt"] : ["attempt", "runAt", "processedAt"],
            });
            const broker = await fx.broker();
            const settledEvents: string[] = [];
            broker.on("settled", (event) => {
              if (event.table.name === table.name) settledEvents.push(idKey(event.id));
            });
            const release = fx.gate();
            const seen: Seen[] = [];
            const results: Settled[] = [];
            const subscription = await broker.subscribe(
              table,
              async (delivery) => {
                see(seen, delivery);
                await release.opened;
                results.push(await ackAndReadBack(fx, table, delivery));
              },
              // A row lock batch of every row: its acks go to the database together before COMMIT.
              { workers: AT_ONCE, batch: AT_ONCE, pollInterval: 20 },
            );
            const ids = await broker.publishMany(
              table,
              Array.from({ length: AT_ONCE * 2 }, (_, n) => ({ payload: n })),
            );
            await waitFor(`${AT_ONCE} handlers parked together`, () => seen.length >= AT_ONCE);
            release.open();
            await waitFor("every handler's settlement to return", () => results.length >= ids.length);
            expect(
              results.filter((result) => result.error !== undefined).map((result) => String(result.error)),
              "settlements that failed",
            ).toEqual([]);
            for (const result of results) {
              if (finish === "delete") {
                expect(
                  result.rowAfter,
                  `row ${result.id} was still there when its settle(ack()) resolved`,
                ).toBeUndefined();
              } else {
                expect(
                  isNull(result.rowAfter?.[columnNames.processedAt]),
                  `row ${result.id} had no processedAt when its settle(ack()) resolved`,
                ).toBe(false);
              }
            }
            await waitFor(
              "the subscription to count every ack",
              () => subscription.stats.acked >= ids.length,
            );
            expect(subscription.stats.acked).toBe(ids.length);
            expect(subscription.stats.settleErrors).toBe(0);
            const delivered = countById(seen);
            expect(
              [...delivered.values()].filter((count) => count > 1),
              "rows delivered twice",
            ).toEqual([]);
            const settled = countById(settledEvents.map((id) => ({ id })));
            expect(
              [...settled.values()].filter((count) => count > 1),
              "rows settled twice",
            ).toEqual([]);
            expect(new Set(settled.keys())).toEqual(new Set(ids.map(idKey)));
          },
        );
      }
    }

    conformanceTest(
      harness,
      SUITE,
      "[lease] of 20 deliveries settling at once, the one whose lease was taken over fails with LEASE_LOST alone; every other row is settled, once",
      async (fx) => {
        await fx.requireForm("lease");
        const count = 20;
        // A lease no test outlives: only the harness's UPDATE takes a row's lease away.
        const table = await fx.table("lease", { lease: 30 });
        const broker = await fx.broker();
        const settledEvents: string[] = [];
        const lostEvents: string[] = [];
        broker.on("settled", (event) => {
          if (event.table.name === table.name) settledEvents.push(idKey(event.id));
        });
        broker.on("leaseLost", (event) => {
          if (event.table.name === table.name) lostEvents.push(idKey(event.id));
        });
        const release = fx.gate();
        const firstRound: Seen[] = [];
        const again: Seen[] = [];
        const results: Settled[] = [];
        const subscription = await broker.subscribe(
          table,
          async (delivery) => {
            see(firstRound, delivery);
            await release.opened;
            results.push(await ackAndReadBack(fx, table, delivery));
            return undefined;
          },
          { workers: count, pollInterval: 20 },
        );
        const ids = await broker.publishMany(
          table,
          Array.from({ length: count }, (_, n) => ({ payload: n })),
        );
        await waitFor(`${count} handlers parked together`, () => firstRound.length >= count);
        // The last to start: released last, so its settlement travels with others, not first and alone.
        const victimDelivery = firstRound[firstRound.length - 1];
        const victim = victimDelivery?.id ?? "";
        await harness.execute(
          `UPDATE ${table.name} SET ${columnNames.lockedUntil} = NULL WHERE ${columnNames.id} = ${victim}`,
        );
        // Expiries are whole seconds: a new claim within the second of the first would write the
        // very token the first delivery holds. The other broker claims once the clock left it.
        const firstExpiry = victimDelivery?.delivery.leaseExpiry?.getTime() ?? 0;
        await waitFor(
          "the clock to leave the second of the first claim",
          () => Date.now() > firstExpiry - 30_000,
        );
        // Another broker takes the row over and acks it (this subscription's own claims keep a
        // row it still holds: they would not take it over).
        const other = await fx.broker();
        other.on("settled", (event) => {
          if (event.table.name === table.name) settledEvents.push(idKey(event.id));
        });
        await other.subscribe(table, (delivery) => void see(again, delivery), { pollInterval: 20 });
        await waitFor("the other broker to take the row over and ack it", () =>
          settledEvents.includes(victim),
        );
        release.open();
        await waitFor("every first-round settlement to return", () => results.length >= count);
        const failed = results.filter((result) => result.error !== undefined);
        const victimResult = results.find((result) => result.id === victim);
        expect(
          failed.map((result) => result.id),
          `the deliveries whose settlement failed (the taken-over row ${victim} read ${JSON.stringify(victimResult?.rowAfter ?? null)} after its settlement; claimed again: ${JSON.stringify(again.map((s) => [s.id, s.attempt, s.at - (victimDelivery?.at ?? 0)]))})`,
        ).toEqual([victim]);
        const lost = failed[0]?.error;
        expect(BrokerError.is(lost, "LEASE_LOST"), `the taken-over row's settlement: ${String(lost)}`).toBe(
          true,
        );
        for (const result of results) {
          if (result.id === victim) continue;
          expect(
            result.rowAfter,
            `row ${result.id} was still there when its settle(ack()) resolved`,
          ).toBeUndefined();
        }
        // The taken-over row was not settled by the failed settlement: the other broker acked it.
        await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
        expect(again.map((s) => [s.id, s.attempt])).toEqual([[victim, 2]]);
        await waitFor("the subscription to count every ack", () => subscription.stats.acked >= count - 1);
        expect(subscription.stats.acked).toBe(count - 1);
        expect(subscription.stats.settleErrors).toBe(1);
        expect(lostEvents).toEqual([victim]);
        const settled = countById(settledEvents.map((id) => ({ id })));
        expect(
          [...settled.values()].filter((n) => n > 1),
          "rows settled twice",
        ).toEqual([]);
        expect(new Set(settled.keys())).toEqual(new Set(ids.map(idKey)));
      },
    );

    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] one worker acking row after row (each ack may travel with the worker's next claim): every settle() resolves once its row is committed, every row is delivered once, in claim order`,
        async (fx) => {
          await fx.requireForm(form);
          const count = 12;
          const table = await fx.table(form, { lease: 30 });
          const broker = await fx.broker();
          const seen: Seen[] = [];
          const results: Settled[] = [];
          const subscription = await broker.subscribe(
            table,
            async (delivery) => {
              see(seen, delivery);
              results.push(await ackAndReadBack(fx, table, delivery));
            },
            { workers: 1, pollInterval: 20 },
          );
          const ids = await broker.publishMany(
            table,
            Array.from({ length: count }, (_, n) => ({ payload: n })),
          );
          await waitFor("every handler's settlement to return", () => results.length >= count);
          expect(
            results.filter((result) => result.error !== undefined).map((result) => String(result.error)),
            "settlements that failed",
          ).toEqual([]);
          for (const result of results) {
            expect(
              result.rowAfter,
              `row ${result.id} was still there when its settle(ack()) resolved`,
            ).toBeUndefined();
          }
          expect(seen.map((s) => s.id)).toEqual(ids.map(idKey));
          expect(seen.map((s) => s.attempt)).toEqual(ids.map(() => 1));
          await waitFor("the subscription to count every ack", () => subscription.stats.acked >= count);
          expect(subscription.stats.acked).toBe(count);
          expect(subscription.stats.settleErrors).toBe(0);
        },
      );
    }

    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] acks the database refuses fail every delivery they carried, and the rows are claimed again`,
        async (fx) => {
          await fx.requireForm(form);
          const refuse = fx.requireRefuseProcessedAt();
          // Extended every second while the handlers wait; after the failure the rows come back within 2 s.
          const table = await fx.table(form, { lease: 2, roles: ["attempt", "runAt", "processedAt"] });
          const count = 4;
          // Dropping the table at the end drops the constraint (or trigger) with it, however the test ends.
          const allow = await refuse(table);
          const first = await fx.broker();
          const release = fx.gate();
          // A row the first broker claims again (due again after the refusal) waits here until the
          // broker closes: no claim, refusal and claim again in a loop.
          const parked = fx.gate();
          const seen: Seen[] = [];
          const results: Settled[] = [];
          await first.subscribe(
            table,
            async (delivery) => {
              const id = idKey(delivery.id);
              if (seen.some((s) => s.id === id)) {
                await parked.opened;
                return undefined;
              }
              see(seen, delivery);
              await release.opened;
              const error = await caught(() => delivery.settle(ack()));
              results.push({ id, error, rowAfter: undefined });
              return undefined;
            },
            { workers: count, batch: count, pollInterval: 20 },
          );
          const ids = await first.publishMany(
            table,
            Array.from({ length: count }, (_, n) => ({ payload: n })),
          );
          await waitFor(`${count} handlers parked together`, () => seen.length >= count);
          release.open();
          await waitFor("every settlement to return", () => results.length >= count);
          for (const result of results) {
            expect(result.error, `the refused ack of row ${result.id} resolved`).toBeDefined();
            expect(
              BrokerError.is(result.error, "LEASE_LOST"),
              `the refused ack of row ${result.id} failed with LEASE_LOST, not the database's error`,
            ).toBe(false);
          }
          const rows = await fx.rows(table);
          expect(rows.map((row) => idKey(row[columnNames.id]))).toEqual(ids.map(idKey));
          expect(
            rows.filter((row) => !isNull(row[columnNames.processedAt])).map((row) => row[columnNames.id]),
            "rows marked processed by a refused ack",
          ).toEqual([]);
          // The first broker may have claimed rows again meanwhile (parked): it gives them up.
          await first.close({ timeout: 100 });
          parked.open();
          await allow();
          // Nothing was lost: another broker claims every row again (a lease row once its lease ran out).
          const next = await fx.broker();
          const again: Seen[] = [];
          await next.subscribe(table, (delivery) => void see(again, delivery), {
            workers: count,
            pollInterval: 20,
          });
          await waitFor("every row to be processed by the next broker", async () =>
            (await fx.rows(table)).every((row) => !isNull(row[columnNames.processedAt])),
          );
          expect(new Set(again.map((s) => s.id))).toEqual(new Set(ids.map(idKey)));
          // Row lock: a refused batch rolls back; the first broker may have counted the failed attempt
          // on a later claim before it closed (a row whose settlement fails is retried with backoff).
          // Lease and advisory: each claim's count stays.
          for (const s of again) {
            expect(s.attempt, `row ${s.id}'s attempt`).toBeGreaterThanOrEqual(form === "rowLock" ? 1 : 2);
          }
        },
      );
    }
  });
}
