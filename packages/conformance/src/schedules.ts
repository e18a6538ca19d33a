/**
 * Schedules (`broker.schedule`) on drivers that keep a schedule ledger (`capabilities.schedules`):
 * several brokers, in one process and in several, publish each tick exactly once; a broker
 * restarted after missing ticks publishes exactly those inside its backfill window; bad input is
 * refused and writes nothing. The clocks are the brokers' own (`createBroker({ clock })`): a
 * clock running fast from a shared instant, or one the test moves, so that thirty ticks take
 * a second or two.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { type Broker, BrokerError, type Schedule, type TableDefinition } from "@rowclaim/core";
import { expect } from "vitest";
import { ChildRunner, isReady } from "./child-process.js";
import type { ChildConfig } from "./child-protocol.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import {
  ensureLedger,
  type FastClock,
  publishedTicks,
  readFastClock,
  type ScheduleChildConfig,
} from "./schedule-support.js";
import { waitFor } from "./wait.js";

const SUITE = "sched";

/** How many ticks the exactly-once tests wait for. */
const TICKS = 30;

/** How much faster than the machine's the exactly-once tests' clock runs: a one-second cron ticks 20 times a real second. */
const SPEED = 20;

/** Skips the test unless the driver keeps a schedule ledger; makes a lease table with the ledger beside it. */
async function scheduledTable(fx: Fixture): Promise<TableDefinition> {
  const caps = await fx.capabilities();
  if (!caps.schedules)
    fx.skip(`the ${fx.harness.name} driver keeps no schedule ledger (capabilities.schedules is false)`);
  const table = await fx.table("lease");
  const driver = await fx.harness.createDriver();
  try {
    await ensureLedger(fx.harness, driver, table);
  } finally {
    await driver.close();
  }
  return table;
}

/** A fast clock starting now at an instant half a second past a whole second. */
function fastClock(): FastClock {
  return { startMs: Date.UTC(2031, 0, 1, 0, 0, 0, 500), realStartMs: Date.now(), speed: SPEED };
}

/** Asserts that `ticks` holds no tick twice and every second between its first and last. */
function assertEachTickOnce(ticks: readonly number[], least: number): void {
  expect(new Set(ticks).size, "a tick was published more than once").toBe(ticks.length);
  expect(ticks.length).toBeGreaterThanOrEqual(least);
  const sorted = [...ticks].sort((a, b) => a - b);
  const first = sorted[0] as number;
  expect(
    sorted.map((tick) => tick - first),
    "the ticks are not every second between the first and the last",
  ).toEqual(sorted.map((_, index) => index * 1000));
}

/** Waits until the table holds at least `count` distinct ticks. */
async function waitForTicks(fx: Fixture, table: TableDefinition, count: number): Promise<void> {
  await waitFor(`${count} ticks to be published`, async () => {
    const ticks = await publishedTicks(fx.harness, table);
    return new Set(ticks).size >= count;
  });
}

function ledgerOf(broker: Broker): NonNullable<Broker["driver"]["scheduleLedger"]> {
  const ledger = broker.driver.scheduleLedger;
  if (ledger === undefined) throw new Error("The driver keeps no schedule ledger.");
  return ledger;
}

/** Registers the schedules sub-suite. */
export function schedulesSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("schedules", () => {
    conformanceTest(
      harness,
      SUITE,
      `[schedules] three brokers running one schedule publish each of ${TICKS} ticks exactly once`,
      async (fx) => {
        const table = await scheduledTable(fx);
        const clock = fastClock();
        const brokers: Broker[] = [];
        for (let n = 0; n < 3; n += 1) {
          const broker = fx.brokerOn(await harness.createDriver(), { clock: () => readFastClock(clock) });
          await broker.schedule(
            table,
            "every-second",
            "* * * * * *",
            (tick: Date) => ({ tick: tick.toISOString() }),
            {
              backfill: 600_000,
            },
          );
          brokers.push(broker);
        }
        await waitForTicks(fx, table, TICKS);
        await Promise.all(brokers.map((broker) => broker.close()));
        assertEachTickOnce(await publishedTicks(harness, table), TICKS);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      `[schedules] three processes running one schedule publish each of ${TICKS} ticks exactly once`,
      async (fx) => {
        const driverModule = fx.requireChildren();
        const table = await scheduledTable(fx);
        const clock = fastClock();
        const runner = fileURLToPath(new URL("./schedule-child.js", import.meta.url));
        const config: ScheduleChildConfig = {
          driverModule,
          table: table.description,
          name: "every-second",
          cron: "* * * * * *",
          backfill: 600_000,
          clock,
        };
        const children = [0, 1, 2].map(() => new ChildRunner(config as unknown as ChildConfig, runner));
        fx.releaseFirst(async () => {
          for (const child of children) child.kill("SIGKILL");
          await Promise.allSettled(children.map((child) => child.exited));
        });
        await Promise.all(children.map((child) => child.next("ready", isReady)));
        await waitForTicks(fx, table, TICKS);
        for (const child of children) child.kill("SIGTERM");
        await Promise.all(children.map((child) => child.exited));
        assertEachTickOnce(await publishedTicks(harness, table), TICKS);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[schedules] a broker stopped for 5 ticks and restarted publishes exactly the missed ticks inside the backfill window",
      async (fx) => {
        const table = await scheduledTable(fx);
        const minute = 60_000;
        const start = Date.UTC(2031, 0, 1, 0, 0, 30);
        let now = start;
        const clock = (): Date => new Date(now);
        const payload = (tick: Date): { tick: string } => ({ tick: tick.toISOString() });
        const first = fx.brokerOn(await harness.createDriver(), { clock });
        const schedule: Schedule = await first.schedule(table, "every-minute", "* * * * *", payload, {
          backfill: 3 * minute,
        });
        expect(schedule.nextTick()?.getTime()).toBe(start + 30_000);
        now = start + minute; // 00:01:30: the 00:01 tick is due
        await waitForTicks(fx, table, 1);
        await first.close();
        // Stopped through the ticks of 00:02, 00:03, 00:04, 00:05 and 00:06.
        now = start + 6 * minute; // 00:06:30: the window is (00:03:30, 00:06:30]
        const second = fx.brokerOn(await harness.createDriver(), { clock });
        await second.schedule(table, "every-minute", "* * * * *", payload, { backfill: 3 * minute });
        const at = (minutes: number): number => start - 30_000 + minutes * minute;
        await waitFor("the backfill to reach the 00:06 tick", async () =>
          (await publishedTicks(harness, table)).includes(at(6)),
        );
        await second.close();
        expect(await publishedTicks(harness, table)).toEqual([at(1), at(4), at(5), at(6)]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[schedules] an invalid cron, an unknown time zone, a negative backfill, an unknown option, an option the table cannot take or a second schedule of one name is refused with DECLARATION and writes nothing",
      async (fx) => {
        const table = await scheduledTable(fx);
        const broker = await fx.broker();
        await broker.schedule(table, "yearly", "0 0 1 1 *", { n: 0 });
        const refused: [string, () => Promise<unknown>][] = [
          ["an invalid cron", () => broker.schedule(table, "a", "61 * * * *", { n: 1 })],
          ["a six-word sentence", () => broker.schedule(table, "b", "at noon on every other day", { n: 1 })],
          [
            "an unknown time zone",
            () => broker.schedule(table, "c", "* * * * *", { n: 1 }, { timezone: "Mars/Olympus" }),
          ],
          ["a negative backfill", () => broker.schedule(table, "d", "* * * * *", { n: 1 }, { backfill: -1 })],
          [
            "an unknown option",
            () =>
              broker.schedule(table, "e", "* * * * *", { n: 1 }, { backfil: 1 } as unknown as {
                backfill: number;
              }),
          ],
          [
            "a group on a table without a group column",
            () => broker.schedule(table, "f", "* * * * *", { n: 1 }, { group: "g" }),
          ],
          ["a second schedule named yearly", () => broker.schedule(table, "yearly", "* * * * * *", { n: 1 })],
        ];
        for (const [what, attempt] of refused) {
          let caught: unknown;
          try {
            await attempt();
          } catch (error) {
            caught = error;
          }
          expect(BrokerError.is(caught, "DECLARATION"), `${what}: ${String(caught)}`).toBe(true);
        }
        expect(broker.schedules.map((schedule) => schedule.name)).toEqual(["yearly"]);
        expect(await fx.rows(table)).toEqual([]);
        expect(await ledgerOf(broker).list(table)).toEqual([]);
      },
    );
  });
}
