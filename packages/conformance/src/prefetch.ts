/**
 * Claim ahead (`subscribe(…, { prefetch })`): rows claimed ahead of the workers are held as the
 * form holds rows in work (a lease extended, a row lock in the batch's open transaction), never
 * more than `workers + prefetch`; on close the rows whose handlers never started are given back
 * at once; a crash loses none of them; a FIFO table still takes one head row at a time; a waiting
 * lease row whose lease was lost is dropped without its handler running. The advisory lock form
 * refuses `prefetch` (each row it held would hold a connection).
 *
 * @module
 */
import {
  ack,
  BrokerError,
  type ClaimFormName,
  type SubscribeOptions,
  type Subscription,
  type TableDefinition,
} from "@rowclaim/core";
import { expect } from "vitest";
import { caught } from "./assertions.js";
import { isReady, isStarted } from "./child-process.js";
import { countById, type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import { publishNumbered, subscribeGated, waitForEmpty } from "./gated.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames, fifoForms } from "./tables.js";
import { idKey, isNull, toMillis, toNumber } from "./values.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "prefetch";

/** The forms that claim ahead (the advisory lock form refuses `prefetch`). */
const prefetchForms: readonly ClaimFormName[] = Object.freeze(["rowLock", "lease"]);

/** The first form of `forms` that claims ahead, the lease form first; `undefined` when none does. */
function anyPrefetchForm(forms: readonly ClaimFormName[]): ClaimFormName | undefined {
  return (["lease", "rowLock"] as const).find((candidate) => forms.includes(candidate));
}

/** How many rows of a lease table hold a lease now (`lockedUntil` set), seen from a second connection. */
async function leasedRows(fx: Fixture, table: TableDefinition): Promise<Record<string, unknown>[]> {
  return (await fx.rows(table)).filter((row) => !isNull(row[columnNames.lockedUntil]));
}

/**
 * Watches, a sample every 25 ms, what `probe` counts until `stop` returns true, then for ten
 * samples more (the claim loop polls every 20 ms in these tests, so a claim it would make beyond
 * the bound has been made by then); returns the largest count seen.
 */
async function largestWhile(
  what: string,
  probe: () => number | Promise<number>,
  stop: (count: number) => boolean,
): Promise<number> {
  let largest = 0;
  const sample = async (): Promise<number> => {
    const count = await probe();
    largest = Math.max(largest, count);
    return count;
  };
  await waitFor(what, async () => stop(await sample()));
  for (let n = 0; n < 10; n += 1) {
    await pause(25);
    await sample();
  }
  return largest;
}

/** The error code `subscribe` gives for `options` on `table` (`"accepted"` when it subscribes). */
async function subscribeCode(
  fx: Fixture,
  table: TableDefinition,
  options: SubscribeOptions,
): Promise<string> {
  const broker = await fx.broker();
  const error = await caught(async () => {
    const subscription = await broker.subscribe(table, () => ack(), { pollInterval: 20, ...options });
    await subscription.stop();
  });
  if (error === undefined) return "accepted";
  return BrokerError.is(error) ? error.code : `not a rowclaim error: ${String(error)}`;
}

/** Registers the claim-ahead sub-suite. */
export function prefetchSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("claim ahead (prefetch)", () => {
    for (const form of prefetchForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] with prefetch, batch defaults to workers + prefetch and may be set up to it, not beyond`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { lease: 5 });
          const broker = await fx.broker();
          // Row lock: one batch (one transaction) holds the rows in work and those waiting for a worker.
          const most = 5;
          const subscription = await broker.subscribe(table, () => ack(), {
            workers: 2,
            prefetch: 3,
            pollInterval: 20,
          });
          expect(subscription.workers).toBe(2);
          expect(subscription.prefetch).toBe(3);
          expect(subscription.batch).toBe(most);
          await subscription.stop();
          expect(await subscribeCode(fx, table, { workers: 2, prefetch: 3, batch: most })).toBe("accepted");
          expect(await subscribeCode(fx, table, { workers: 2, prefetch: 3, batch: most + 1 })).toBe(
            "DECLARATION",
          );
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "[advisory] prefetch above 0 is refused at subscribe with DECLARATION (each held row would hold a connection)",
      async (fx) => {
        await fx.requireForm("advisory");
        const table = await fx.table("advisory");
        expect(await subscribeCode(fx, table, { workers: 2, prefetch: 1 })).toBe("DECLARATION");
        expect(await subscribeCode(fx, table, { workers: 2, prefetch: 0 })).toBe("accepted");
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "a prefetch that is negative or not a whole number is refused as workers: -1 is",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = anyPrefetchForm(caps.forms);
        if (form === undefined)
          return fx.skip(`the ${harness.name} driver offers neither the row lock nor the lease form`);
        const table = await fx.table(form, { lease: 5 });
        const expected = await subscribeCode(fx, table, { workers: -1 });
        expect(expected, "what workers: -1 gives").not.toBe("accepted");
        for (const prefetch of [-1, 1.5, Number.NaN]) {
          expect(await subscribeCode(fx, table, { workers: 1, prefetch }), `prefetch: ${prefetch}`).toBe(
            expected,
          );
        }
      },
    );

    for (const form of prefetchForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] rows held never exceed workers + prefetch while the handlers wait`,
        async (fx) => {
          await fx.requireForm(form);
          const workers = 2;
          const prefetch = 3;
          const bound = workers + prefetch;
          const total = 12;
          const table = await fx.table(form, { lease: 30 });
          const broker = await fx.broker();
          const { subscription, seen, release } = await subscribeGated(fx, broker, table, {
            workers,
            prefetch,
            pollInterval: 20,
          });
          const ids = await publishNumbered(broker, table, total);
          const largestHeld = await largestWhile(
            `the subscription to hold ${bound} rows`,
            () => subscription.held,
            (held) => held >= bound && seen.length >= workers,
          );
          expect(largestHeld, "subscription.held").toBe(bound);
          expect(seen, "handlers started beyond the workers").toHaveLength(workers);
          if (form === "lease") {
            // Seen from a second connection: as many rows leased, each with its attempt counted.
            const largestLeased = await largestWhile(
              `${bound} rows to be leased`,
              async () => (await leasedRows(fx, table)).length,
              (leased) => leased >= bound,
            );
            expect(largestLeased, "rows leased at once").toBe(bound);
            for (const row of await leasedRows(fx, table)) expect(toNumber(row[columnNames.attempt])).toBe(2);
          } else {
            // A rival broker takes every row the subscription does not hold locked, and no other.
            const rival = await fx.broker();
            // One worker more than the rows left free: a row the subscription counts as held but
            // left unlocked would go to the rival too.
            const { seen: rivalSeen, release: rivalRelease } = await subscribeGated(fx, rival, table, {
              workers: total - bound + 1,
              batch: 1,
              pollInterval: 20,
            });
            const largestRival = await largestWhile(
              `a rival broker to take the ${total - bound} rows the subscription does not hold`,
              () => rivalSeen.length,
              (taken) => taken >= total - bound,
            );
            expect(largestRival, "rows the rival took (the rest are locked by the subscription)").toBe(
              total - bound,
            );
            const ours = new Set(seen.map((s) => s.id));
            expect(
              rivalSeen.filter((s) => ours.has(s.id)),
              "rows delivered by both brokers",
            ).toEqual([]);
            rivalRelease.open();
          }
          release.open();
          await waitForEmpty(fx, table);
          const counts = countById(seen);
          expect(
            [...counts.values()].filter((n) => n > 1),
            "rows delivered twice",
          ).toEqual([]);
          expect(seen.length + (form === "lease" ? 0 : total - bound)).toBe(ids.length);
          // held drops once each settlement returned, a round trip after the row is gone.
          await waitFor("the subscription to hold nothing", () => subscription.held === 0);
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "[lease] a row waiting for a worker keeps its lease: slow handlers past two leases, no LEASE_LOST, no row delivered twice",
      async (fx) => {
        await fx.requireForm("lease");
        // A 2 s lease (extended each second); the last of three rows waits two handlers of 2.2 s each.
        const table = await fx.table("lease", { lease: 2 });
        const broker = await fx.broker();
        const seen: Seen[] = [];
        const subscription = await broker.subscribe(
          table,
          async (delivery) => {
            see(seen, delivery);
            await pause(2200);
            return ack();
          },
          { workers: 1, prefetch: 2, pollInterval: 20 },
        );
        await publishNumbered(broker, table, 3);
        await waitFor("three rows held", () => subscription.held >= 3);
        // A rival broker polls all along: it must never get a row the first holds ahead.
        const rival = await fx.broker();
        const rivalSeen: Seen[] = [];
        await rival.subscribe(table, (delivery) => void see(rivalSeen, delivery), { pollInterval: 50 });
        await waitForEmpty(fx, table, "every row to be acked", { timeoutMs: 30_000 });
        await waitFor("the subscription to count three acks", () => subscription.stats.acked >= 3);
        expect(rivalSeen, "rows the rival took: a waiting row's lease ran out").toEqual([]);
        expect(seen.map((s) => s.attempt)).toEqual([1, 1, 1]);
        expect(subscription.stats.settleErrors).toBe(0);
      },
    );

    for (const form of prefetchForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] close() gives rows waiting for a worker back at once, unhandled, and the next subscriber takes them`,
        async (fx) => {
          await fx.requireForm(form);
          // A lease row not given back would stay leased for 30 s, beyond every wait below.
          const table = await fx.table(form, { lease: 30 });
          const broker = await fx.broker();
          const { subscription, seen, release } = await subscribeGated(fx, broker, table, {
            workers: 1,
            prefetch: 3,
            pollInterval: 20,
          });
          const ids = await publishNumbered(broker, table, 6);
          await waitFor(
            "one row in work and three waiting",
            () => seen.length >= 1 && subscription.held >= 4,
          );
          const inWork = seen[0]?.id;
          const closing = broker.close();
          if (form === "lease") {
            // While close() waits for the row in work, the waiting rows are already released: due
            // again, with the attempt their claim counted.
            await waitFor("the waiting rows' leases to be released", async () => {
              const leased = await leasedRows(fx, table);
              return leased.length === 1 && idKey(leased[0]?.[columnNames.id]) === inWork;
            });
            const counted = (await fx.rows(table)).filter((row) => toNumber(row[columnNames.attempt]) === 2);
            expect(counted, "rows whose claim counted an attempt").toHaveLength(4);
          }
          release.open();
          await closing;
          expect(
            seen.map((s) => s.id),
            "handlers that ran: only the one in work",
          ).toEqual([inWork]);
          const left = await fx.rows(table);
          expect(left).toHaveLength(ids.length - 1);
          if (form === "rowLock") {
            // The batch left its waiting rows untouched: no attempt counted.
            expect(left.map((row) => toNumber(row[columnNames.attempt]))).toEqual(left.map(() => 1));
          }
          const next = await fx.broker();
          const again: Seen[] = [];
          await next.subscribe(table, (delivery) => void see(again, delivery), {
            workers: 2,
            pollInterval: 20,
          });
          await waitForEmpty(fx, table, "the next broker to ack every row left");
          expect(new Set(again.map((s) => s.id))).toEqual(
            new Set(ids.map(idKey).filter((id) => id !== inWork)),
          );
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a process killed with rows claimed ahead loses none of them`,
        async (fx) => {
          await fx.requireForm(form);
          fx.requireChildren();
          const table = await fx.table(form, { lease: 1 });
          const child = fx.child({
            table: table.description,
            mode: "hang",
            subscribe: { workers: 1, prefetch: 3, pollInterval: 20 },
          });
          await child.next("that it subscribed", isReady);
          const broker = await fx.broker();
          const ids = await publishNumbered(broker, table, 4);
          await child.next("that its handler started", isStarted);
          if (form === "lease") {
            await waitFor(
              "the child to hold every row",
              async () => (await leasedRows(fx, table)).length === 4,
            );
          }
          child.kill("SIGKILL");
          await child.exited;
          const seen: Seen[] = [];
          await broker.subscribe(table, (delivery) => void see(seen, delivery), {
            workers: 2,
            pollInterval: 20,
          });
          await waitForEmpty(fx, table, "every row to be acked after the crash");
          expect(new Set(seen.map((s) => s.id))).toEqual(new Set(ids.map(idKey)));
        },
      );
    }

    for (const form of fifoForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] with prefetch, a FIFO table still takes one head row at a time`,
        async (fx) => {
          await fx.requireFifo(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt", "group"], fifo: true, lease: 30 });
          const broker = await fx.broker();
          const { subscription, seen, release } = await subscribeGated<number>(fx, broker, table, {
            group: "ordered",
            workers: 2,
            prefetch: 3,
            pollInterval: 20,
          });
          const count = 5;
          await publishNumbered(broker, table, count, { group: "ordered" });
          const largestHeld = await largestWhile(
            "the head to be in work",
            async () =>
              form === "lease"
                ? Math.max(subscription.held, (await leasedRows(fx, table)).length)
                : subscription.held,
            () => seen.length >= 1,
          );
          expect(largestHeld, "rows of one FIFO group held at once").toBe(1);
          expect(seen).toHaveLength(1);
          release.open();
          await waitFor("every row of the group to be handled", () => seen.length >= count);
          expect(seen.map((s) => s.payload)).toEqual(Array.from({ length: count }, (_, n) => n));
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "[lease] a waiting row whose lease was lost is dropped without running its handler",
      async (fx) => {
        await fx.requireForm("lease");
        // Extended every second: the next extension finds the lost lease. The row is dropped when its
        // turn comes, and, claimable again, claimed anew (its delivery then reads attempt 2).
        const table = await fx.table("lease", { lease: 2 });
        const broker = await fx.broker();
        const { subscription, seen, release } = await subscribeGated(fx, broker, table, {
          workers: 1,
          prefetch: 2,
          pollInterval: 20,
        });
        const ids = await publishNumbered(broker, table, 3);
        await waitFor("one row in work and two waiting", () => seen.length >= 1 && subscription.held >= 3);
        const inWork = seen[0]?.id;
        const victim = ids.map(idKey).find((id) => id !== inWork) ?? "";
        const expiryOfInWork = async (): Promise<number> => {
          const row = (await fx.rows(table)).find((r) => idKey(r[columnNames.id]) === inWork);
          return toMillis(row?.[columnNames.lockedUntil]);
        };
        // Another party takes the waiting row's lease away.
        await harness.execute(
          `UPDATE ${table.name} SET ${columnNames.lockedUntil} = NULL WHERE ${columnNames.id} = ${victim}`,
        );
        // Two extensions later (seen moving the lease of the row in work), at least one extension
        // began after the lease was taken away, and found it gone.
        let expiry = await expiryOfInWork();
        for (const extension of ["first", "second"]) {
          const before = expiry;
          expiry = await waitFor(`the ${extension} extension after the lease was taken away`, async () => {
            const now = await expiryOfInWork();
            return now !== before ? now : undefined;
          });
        }
        release.open();
        await waitForEmpty(fx, table);
        const victimSeen = seen.filter((s) => s.id === victim).map((s) => s.attempt);
        expect(victimSeen, "the lost claim's handler ran (attempt 1), or the row ran twice").toEqual([2]);
        expect(subscription.stats.settleErrors, "settlements that failed").toBe(0);
        expect(new Set(seen.map((s) => s.id))).toEqual(new Set(ids.map(idKey)));
      },
    );

    conformanceTest(
      harness,
      SUITE,
      `rows claimed ahead are counted in subscription.held, never in inWork (every form that claims ahead)`,
      async (fx) => {
        const caps = await fx.capabilities();
        const form = anyPrefetchForm(caps.forms);
        if (form === undefined)
          return fx.skip(`the ${harness.name} driver offers neither the row lock nor the lease form`);
        const table = await fx.table(form, { lease: 30 });
        const broker = await fx.broker();
        const release = fx.gate();
        let started = 0;
        const subscription: Subscription = await broker.subscribe(
          table,
          async () => {
            started += 1;
            await release.opened;
            return ack();
          },
          { workers: 1, prefetch: 2, pollInterval: 20 },
        );
        await publishNumbered(broker, table, 4);
        await waitFor("three rows held", () => subscription.held >= 3 && started >= 1);
        expect(subscription.inWork).toBe(1);
        expect(subscription.held).toBe(3);
        release.open();
        await waitForEmpty(fx, table);
        await waitFor("nothing held", () => subscription.held === 0);
        expect(started).toBe(4);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] a waiting row whose lease ran out by the host's clock is not started; another broker that took it runs it",
      async (fx) => {
        await fx.requireForm("lease");
        // No extension: the waiting rows' leases run out while the one row in work is held.
        const table = await fx.table("lease", { lease: 1 });
        const broker = await fx.broker();
        const { subscription, seen, release } = await subscribeGated(fx, broker, table, {
          workers: 1,
          prefetch: 2,
          pollInterval: 20,
          extendLeases: false,
        });
        const ids = await publishNumbered(broker, table, 3);
        await waitFor("one row in work and two waiting", () => seen.length >= 1 && subscription.held >= 3);
        const inWork = seen[0]?.id;
        const waiting = ids.map(idKey).filter((id) => id !== inWork);
        // Another broker takes the waiting rows once their leases ran out, and acks them.
        const other = await fx.broker();
        const taken: Seen[] = [];
        await other.subscribe(table, (delivery) => void see(taken, delivery), { pollInterval: 20 });
        await waitFor("the other broker to take both waiting rows", () =>
          waiting.every((id) => taken.some((s) => s.id === id)),
        );
        release.open();
        await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
        await waitFor("the first subscription to hold nothing", () => subscription.held === 0);
        expect(
          seen.filter((s) => waiting.includes(s.id)).map((s) => s.id),
          "waiting rows whose lease ran out, started by the first subscription",
        ).toEqual([]);
      },
    );
  });
}
