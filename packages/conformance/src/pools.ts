/**
 * Pools: a subscription whose form needs more connections than the driver's pool holds is
 * refused at `subscribe` with `DECLARATION` (a handler that publishes, or the next claim, would
 * wait for a connection no one returns), and a wait for a connection of an exhausted pool ends
 * in `CONNECTION_TIMEOUT`, never in a hang; a wait of 0 ms or less is refused when the driver is
 * made, with `INVALID_ARGUMENT` (a mistake in an argument, not in a table's description). All run on pools of a size the suite chooses
 * (`createSizedPoolDriver` in the harness).
 *
 * @module
 */
import { ack, type ClaimFormName } from "@rowclaim/core";
import { connectionsNeeded } from "@rowclaim/core/driver";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness, SizedPoolDriver } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, formLabels } from "./tables.js";
import { waitFor, within } from "./wait.js";

const SUITE = "pools";

/** A driver on a pool of `max` connections (ended after the test), skipping the test without the hook. */
async function sizedPool(fx: Fixture, max: number, acquireTimeoutMs: number): Promise<SizedPoolDriver> {
  const create = fx.harness.createSizedPoolDriver?.bind(fx.harness);
  if (create === undefined) {
    return fx.skip(
      `the ${fx.harness.name} harness gives no createSizedPoolDriver(), so no test can choose the size of the driver's pool`,
    );
  }
  const pool = await create({ max, acquireTimeoutMs });
  fx.endLater(pool);
  return pool;
}

/** Registers the pools sub-suite. */
export function poolsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("pools", () => {
    for (const form of allForms.filter((name: ClaimFormName) => name !== "lease")) {
      conformanceTest(
        harness,
        SUITE,
        `[${form}] a subscription whose workers need more connections than the pool holds is refused with DECLARATION; one that fits runs`,
        async (fx) => {
          const caps = await fx.requireForm(form);
          if (form === "advisory" && caps.advisoryScope === "process") {
            return fx.skip(
              `the ${harness.name} driver keeps advisory keys in the process: its deliveries hold no connection of a pool`,
            );
          }
          const table = await fx.table(form);
          const workers = 3;
          // One connection per delivery in work, plus one for claims and publishes.
          const needed = connectionsNeeded(form, workers);
          const small = await sizedPool(fx, needed - 1, 5000);
          const refused = fx.brokerOn(small.driver);
          expectCode(await caught(() => refused.subscribe(table, () => ack(), { workers })), "DECLARATION");
          const enough = await sizedPool(fx, needed, 5000);
          const broker = fx.brokerOn(enough.driver);
          let handled = 0;
          await broker.subscribe(
            table,
            async (delivery) => {
              // A handler that publishes needs the connection the check keeps for it.
              if (delivery.payload === "first") await broker.publish(table, "second");
              handled += 1;
            },
            { workers, pollInterval: 20 },
          );
          await broker.publish(table, "first");
          await waitFor(
            "both rows to be handled on a pool of the size the check asks for",
            async () => handled >= 2 && (await fx.rows(table)).length === 0,
          );
        },
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "a driver told to wait 0 ms (or less) for a connection is refused when it is made, with INVALID_ARGUMENT",
      async (fx) => {
        const create = fx.harness.createSizedPoolDriver?.bind(fx.harness);
        if (create === undefined) {
          return fx.skip(
            `the ${harness.name} harness gives no createSizedPoolDriver(), so no test can choose the driver's connection wait`,
          );
        }
        for (const acquireTimeoutMs of [0, -1, Number.NaN]) {
          expectCode(await caught(() => create({ max: 2, acquireTimeoutMs })), "INVALID_ARGUMENT");
        }
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "a publish waiting for a connection of an exhausted pool fails with CONNECTION_TIMEOUT within the driver's bound, and works again once a connection is back",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0];
        if (form === undefined) return fx.skip(`the ${harness.name} driver offers no form`);
        const table = await fx.table(form);
        const pool = await sizedPool(fx, 2, 300);
        const broker = fx.brokerOn(pool.driver);
        await broker.publish(table, "before");
        // The application holds every connection of its pool.
        const giveBack = await pool.holdAll();
        let given = false;
        fx.releaseFirst(async () => {
          if (!given) await giveBack();
        });
        expectCode(
          await caught(() =>
            within(
              "the publish to give up waiting for a connection",
              broker.publish(table, "while exhausted"),
              10_000,
            ),
          ),
          "CONNECTION_TIMEOUT",
        );
        given = true;
        await giveBack();
        await broker.publish(table, "after");
        expect(
          (await fx.rows(table)).length,
          `the ${formLabels[form]} table holds the rows published before and after`,
        ).toBe(2);
      },
    );
  });
}
