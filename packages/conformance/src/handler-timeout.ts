/**
 * Handler timeouts: a handler that never returns (and ignores its signal) sees the delivery's
 * `signal` abort with `HANDLER_TIMEOUT` at the subscription's `timeout`; after `timeoutGrace`
 * the broker settles the row as a failed attempt (a transactional body still running is given
 * up), so another broker handles it, and the hung handler holds no connection any more.
 *
 * @module
 */
import { ack, type Broker, BrokerError, type ClaimFormName, type Subscription } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness, UserPoolDriver } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { importDriverModule } from "./transactional-support.js";
import { idKey } from "./values.js";
import { waitFor, within } from "./wait.js";

const SUITE = "timeout";

const TIMEOUT_MS = 300;
const GRACE_MS = 200;

/** A broker on a pool the harness owns where it makes them (to count connections), else a plain one. */
async function countedBroker(
  fx: Fixture,
  harness: ConformanceHarness,
): Promise<{ broker: Broker; pool: UserPoolDriver | undefined }> {
  if (harness.createUserPoolDriver === undefined) return { broker: await fx.broker(), pool: undefined };
  return fx.userPoolBroker();
}

/**
 * Subscribes a hung handler (`body` decides how it hangs) with the timeout, waits for its first
 * delivery, stops the subscription (so that it claims nothing more; the stop waits far longer
 * than the timeout), and checks that another broker handles the row and no connection is held.
 */
async function hungThenHandledElsewhere(
  fx: Fixture,
  harness: ConformanceHarness,
  form: ClaimFormName,
  hang: (delivery: Parameters<Parameters<Broker["subscribe"]>[1]>[0]) => Promise<unknown>,
  transactional: boolean,
): Promise<void> {
  const table = await fx.table(form, { roles: ["attempt", "runAt"] });
  const { broker, pool } = await countedBroker(fx, harness);
  const id = await broker.publish(table, "hangs");
  const aborted: unknown[] = [];
  const hung: Seen[] = [];
  const subscription: Subscription = await broker.subscribe(
    table,
    async (delivery) => {
      see(hung, delivery);
      delivery.signal.addEventListener("abort", () => aborted.push(delivery.signal.reason), { once: true });
      await hang(delivery);
    },
    {
      timeout: TIMEOUT_MS,
      timeoutGrace: GRACE_MS,
      backoff: { baseMs: 0 },
      pollInterval: 50,
      listen: false,
      ...(transactional ? { transactional: true } : {}),
    },
  );
  await waitFor("the hung handler's delivery", () => hung.length > 0);
  // The stop waits up to a minute for the delivery: only the timeout ends it sooner.
  await within(
    "the subscription's stop, ended by the handler's timeout",
    subscription.stop({ timeout: 60_000 }),
    30_000,
  );
  expect(aborted.length, "the delivery's signal aborted").toBe(1);
  expect(BrokerError.is(aborted[0], "HANDLER_TIMEOUT"), "the abort's reason").toBe(true);
  expect(subscription.stats.timedOut).toBe(1);
  if (pool !== undefined) {
    await waitFor(
      "the hung handler's pool to have no connection checked out",
      async () => (await pool.checkedOut()) === 0,
    );
  }
  const other = await fx.broker();
  const handled: Seen[] = [];
  await other.subscribe(table, (delivery) => void see(handled, delivery), { pollInterval: 50 });
  await waitFor("another broker to handle the row", async () => (await fx.rows(table)).length === 0);
  expect(handled.map((s) => s.id)).toEqual([idKey(id)]);
  expect(hung).toHaveLength(1);
}

/** Registers the handler timeout sub-suite. */
export function handlerTimeoutSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("handler timeout", () => {
    for (const form of allForms) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a handler that never returns is aborted at its timeout, its row settled as a retry after the grace and handled by another broker, no connection left held`,
        async (fx) => {
          await fx.requireForm(form);
          const gate = fx.gate();
          await hungThenHandledElsewhere(fx, harness, form, () => gate.opened, false);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a row's own timeout (timeoutColumn) aborts its handler and the row is handled again; a row without one runs on`,
        async (fx) => {
          await fx.requireForm(form);
          const table = await fx.table(form, { roles: ["attempt", "runAt"], extraColumns: ["timeout_ms"] });
          const broker = await fx.broker();
          const timed = idKey(await broker.publish(table, "timed", { values: { timeout_ms: TIMEOUT_MS } }));
          await broker.publish(table, "untimed");
          const gate = fx.gate();
          const aborted: string[] = [];
          const seen: Seen[] = [];
          await broker.subscribe(
            table,
            async (delivery) => {
              see(seen, delivery);
              delivery.signal.addEventListener(
                "abort",
                () => {
                  if (BrokerError.is(delivery.signal.reason, "HANDLER_TIMEOUT"))
                    aborted.push(idKey(delivery.id));
                },
                { once: true },
              );
              if (delivery.attempt === 1) await gate.opened;
              return ack();
            },
            {
              workers: 3,
              timeoutColumn: "timeout_ms",
              timeoutGrace: GRACE_MS,
              backoff: { baseMs: 0 },
              pollInterval: 50,
              listen: false,
            },
          );
          await waitFor("the timed row to be delivered again after its timeout and grace", () =>
            seen.some((s) => s.id === timed && s.attempt === 2),
          );
          expect(aborted, "the deliveries whose signal aborted with HANDLER_TIMEOUT").toEqual([timed]);
          gate.open();
          await waitFor("both rows to be acked", async () => (await fx.rows(table)).length === 0);
          expect(aborted).toEqual([timed]);
        },
      );

      conformanceTest(
        harness,
        SUITE,
        `[${form}] a transactional handler whose body never returns is given up after its timeout and grace; another broker handles the row, no connection left held`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          if (!(caps.transactionalHandlers ?? []).includes(form)) {
            return fx.skip(`the ${harness.name} driver offers no transactional handlers in this form`);
          }
          const driverModule = harness.childDriverModule;
          const bodies =
            driverModule === undefined
              ? undefined
              : (await importDriverModule(driverModule)).transactionBodies;
          if (bodies === "sync") {
            return fx.skip(
              `the ${harness.name} driver runs transaction bodies synchronously: a body cannot wait, so it cannot hang without blocking the process`,
            );
          }
          const gate = fx.gate();
          await hungThenHandledElsewhere(
            fx,
            harness,
            form,
            (delivery) =>
              delivery.transaction(async () => {
                await gate.opened;
                return ack();
              }),
            true,
          );
        },
      );
    }
  });
}
