/**
 * Connections, counted: while handlers wait at a gate, a driver on a pool the harness owns holds
 * exactly what its form promises — the lease form none (rows claimed ahead included), the row
 * lock form one per open batch, the advisory lock form one per delivery in work. The claim
 * loop holds none then (every worker is busy, so it claims nothing), and the subscriptions
 * run with `listen: false`, so a driver's LISTEN connection is not counted.
 *
 * @module
 */
import type { ClaimFormName, SubscribeOptions } from "@rowclaim/core";
import { expect } from "vitest";
import { publishNumbered, subscribeGated, waitForEmpty } from "./gated.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { formLabels } from "./tables.js";
import { pause, waitFor } from "./wait.js";

const SUITE = "conn";

/** One case: a subscription's options and the connections its form promises while every worker waits. */
interface ConnectionCase {
  readonly form: ClaimFormName;
  readonly options: SubscribeOptions & { readonly workers: number };
  /** Rows published (more than the subscription can hold, so that its claims come back full). */
  readonly rows: number;
  /** The connections the form promises. */
  readonly expected: number;
  /** The promise, as the test's title states it. */
  readonly promise: string;
}

const cases: readonly ConnectionCase[] = [
  {
    form: "lease",
    options: { workers: 3 },
    rows: 5,
    expected: 0,
    promise: "no connection while 3 handlers run",
  },
  {
    form: "lease",
    options: { workers: 2, prefetch: 3 },
    rows: 8,
    expected: 0,
    promise: "no connection while 2 handlers run and 3 rows wait, claimed ahead",
  },
  {
    form: "rowLock",
    options: { workers: 3, batch: 1 },
    rows: 5,
    expected: 3,
    promise: "one connection per open batch: 3 batches of one row, 3 connections",
  },
  {
    form: "rowLock",
    options: { workers: 2, prefetch: 2 },
    rows: 6,
    expected: 1,
    promise: "one connection per open batch: one batch of 2 rows in work and 2 claimed ahead, 1 connection",
  },
  {
    form: "advisory",
    options: { workers: 3 },
    rows: 5,
    expected: 3,
    promise: "one connection per delivery in work: 3 handlers, 3 connections",
  },
];

/** Registers the connections sub-suite (skipped where the harness makes no driver on a pool of its own). */
export function connectionsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("connections", () => {
    for (const { form, options, rows, expected, promise } of cases) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] while handlers wait, the ${formLabels[form]} form holds ${promise}`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          fx.requireUserPools();
          if (form === "advisory" && caps.advisoryScope === "process") {
            return fx.skip(
              `the ${harness.name} driver keeps advisory keys in the process (advisoryScope "process"): a key holds no connection`,
            );
          }
          const table = await fx.table(form, { lease: 30 });
          const { broker, pool } = await fx.userPoolBroker();
          const { subscription, seen, release } = await subscribeGated(fx, broker, table, {
            ...options,
            pollInterval: 20,
            listen: false,
          });
          const holds = options.workers + (options.prefetch ?? 0);
          await publishNumbered(broker, table, rows);
          await waitFor(
            `${options.workers} handlers in work and ${holds} rows held`,
            () => seen.length >= options.workers && subscription.held >= holds,
          );
          let last = Number.NaN;
          await waitFor(`the pool to have ${expected} connection(s) checked out`, async () => {
            last = await pool.checkedOut();
            return last === expected;
          }).catch((error: unknown) => {
            throw new Error(
              `${String(error)} The pool had ${last} checked out (held: ${subscription.held}).`,
            );
          });
          // And it stays so while the claim loop polls (every 20 ms): ten samples over a quarter second.
          const samples: number[] = [];
          for (let n = 0; n < 10; n += 1) {
            await pause(25);
            samples.push(await pool.checkedOut());
          }
          expect(samples, "connections checked out while every handler waits").toEqual(
            samples.map(() => expected),
          );
          expect(seen).toHaveLength(options.workers);
          release.open();
          await waitForEmpty(fx, table);
        },
      );
    }
  });
}
