/**
 * Run-time controls (`broker.pause`, `broker.resume`, `controlState`, `subscribe({ rateLimit })`)
 * on drivers that keep them (`capabilities.controls`): a pause written by another process stops
 * every broker's claims, per table or per group, while rows in work finish, and outlives a
 * broker's restart; a rate limit shared by four brokers, each on its own pool, keeps every span
 * of windows within one window's limit of what it allows (counted from the rows' own
 * `processedAt`). Each broker runs on its own driver, as separate processes do; a pause "from
 * another process" is written through a fresh driver's control store, so no broker hears of it
 * through this process.
 *
 * @module
 */
import {
  type Broker,
  BrokerError,
  type ClaimFormName,
  type Driver,
  type TableDefinition,
} from "@rowclaim/core";
import {
  type ControlStore,
  controlTableKey,
  type DriverCapabilities,
  scopeText,
} from "@rowclaim/core/driver";
import { expect } from "vitest";
import { isReady } from "./child-process.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "controls";
const POLL_MS = 150;

/** A broker on a driver of its own whose control-table reads are counted (each read is one poll of the pause state). */
interface CountedBroker {
  readonly broker: Broker;
  /** Reads of the control table so far. */
  reads(): number;
}

/** Skips the test unless the driver keeps run-time controls; returns its capabilities. */
async function requireControls(fx: Fixture): Promise<DriverCapabilities> {
  const caps = await fx.capabilities();
  if (!caps.controls) {
    fx.skip(
      `the ${fx.harness.name} driver keeps no run-time controls (capabilities.controls is false): pause, resume and rateLimit are refused with UNSUPPORTED_CONTROL`,
    );
  }
  return caps;
}

/** The form the tests run in: lease where offered (its claims write the row), else the first offered. */
function formOf(caps: DriverCapabilities): ClaimFormName {
  return caps.forms.includes("lease") ? "lease" : (caps.forms[0] as ClaimFormName);
}

/** Wraps `driver` so that its control store's reads are counted. */
function countReads(driver: Driver): { driver: Driver; reads: () => number } {
  let reads = 0;
  const store = driver.controls as ControlStore;
  const counted: ControlStore = {
    setPaused: store.setPaused.bind(store),
    read: (table) => {
      reads += 1;
      return store.read(table);
    },
    takeRate: store.takeRate.bind(store),
    returnRate: store.returnRate.bind(store),
    ensure: store.ensure.bind(store),
    ...(store.watch === undefined ? {} : { watch: store.watch.bind(store) }),
    schemaSql: store.schemaSql.bind(store),
  };
  const wrapped = new Proxy(driver, {
    get(target, property) {
      if (property === "controls") return counted;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { driver: wrapped, reads: () => reads };
}

async function countedBroker(fx: Fixture): Promise<CountedBroker> {
  const { driver, reads } = countReads(await fx.harness.createDriver());
  return { broker: fx.brokerOn(driver), reads };
}

/** The control store of a driver of its own, as another process would write with (closed after the test). */
async function otherProcess(fx: Fixture): Promise<ControlStore> {
  const driver = await fx.harness.createDriver();
  fx.brokerOn(driver);
  return driver.controls as ControlStore;
}

/** Deletes the control rows of `table` after the test (the control table is shared by every table). */
function forgetControlsLater(fx: Fixture, table: TableDefinition): void {
  fx.releaseFirst(async () => {
    const store = await otherProcess(fx);
    for (const row of await store.read(controlTableKey(table))) {
      await store.setPaused(controlTableKey(table), row.scope, false);
    }
  });
}

/** Waits until every broker read the control table at least `more` times beyond `since`. */
async function waitForReads(
  what: string,
  brokers: readonly CountedBroker[],
  since: readonly number[],
  more = 2,
) {
  await waitFor(what, () => brokers.every((counted, index) => counted.reads() >= (since[index] ?? 0) + more));
}

/** Rows of `table` untouched by any claim, as a second connection sees them: no attempt counted, no lease written. */
function untouched(rows: readonly Record<string, unknown>[]): boolean {
  return rows.every(
    (row) =>
      Number(row[columnNames.attempt]) === 1 &&
      (row[columnNames.lockedUntil] === undefined || row[columnNames.lockedUntil] === null),
  );
}

/** Registers the controls sub-suite. */
export function controlsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("controls", () => {
    conformanceTest(
      harness,
      SUITE,
      "a table paused from another process is claimed by none of three brokers while rows are due, and is claimed at the first read of the pause state after the resume",
      async (fx) => {
        const form = formOf(await requireControls(fx));
        const table = await fx.table(form, { lease: 10, roles: ["attempt", "runAt"] });
        forgetControlsLater(fx, table);
        const other = await otherProcess(fx);
        await other.setPaused(controlTableKey(table), scopeText({ kind: "table" }), true);
        const brokers = [await countedBroker(fx), await countedBroker(fx), await countedBroker(fx)];
        let handled = 0;
        let firstBy: number | undefined;
        let readsAtResume: number[] = [];
        const readsAtFirst: number[] = [];
        for (const [index, counted] of brokers.entries()) {
          await counted.broker.subscribe(
            table,
            () => {
              handled += 1;
              if (firstBy === undefined) {
                firstBy = index;
                readsAtFirst.push(...brokers.map((each) => each.reads()));
              }
            },
            { workers: 2, pollInterval: POLL_MS },
          );
        }
        await brokers[0]?.broker.publishMany(
          table,
          Array.from({ length: 12 }, (_, n) => ({ payload: n })),
        );
        const published = brokers.map((counted) => counted.reads());
        await waitForReads(
          "every broker to read the pause state twice after the publish",
          brokers,
          published,
        );
        expect(handled, "rows handled while paused").toBe(0);
        const rows = await fx.rows(table);
        expect(rows.length).toBe(12);
        expect(untouched(rows), "rows claimed while paused (attempt counted or lease written)").toBe(true);
        expect((await brokers[1]?.broker.controlState(table))?.paused).toBe(true);

        await other.setPaused(controlTableKey(table), scopeText({ kind: "table" }), false);
        readsAtResume = brokers.map((counted) => counted.reads());
        await waitFor(
          "every row to be handled after the resume",
          async () => (await fx.rows(table)).length === 0,
        );
        expect(handled).toBe(12);
        const by = firstBy as number;
        // The first claim after the resume came with the first read that began after it.
        expect((readsAtFirst[by] ?? 0) - (readsAtResume[by] ?? 0)).toBeLessThanOrEqual(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "pausing one group stops only that group's subscriptions; resuming it lets them claim again",
      async (fx) => {
        const form = formOf(await requireControls(fx));
        const table = await fx.table(form, { lease: 10, roles: ["attempt", "runAt", "group"] });
        forgetControlsLater(fx, table);
        const a = await countedBroker(fx);
        const b = await countedBroker(fx);
        const seen: Record<string, number> = { a: 0, b: 0 };
        for (const [group, counted] of [
          ["a", a],
          ["b", b],
        ] as const) {
          await counted.broker.subscribe(
            table,
            () => {
              seen[group] = (seen[group] ?? 0) + 1;
            },
            { group, pollInterval: POLL_MS },
          );
        }
        await a.broker.pause(table, { group: "a" });
        const since = [a.reads(), b.reads()];
        await a.broker.publishMany(table, [
          ...Array.from({ length: 4 }, (_, n) => ({ payload: n, group: "a" })),
          ...Array.from({ length: 4 }, (_, n) => ({ payload: n, group: "b" })),
        ]);
        await waitFor("group b's rows to be handled", async () => {
          const rows = await fx.rows(table);
          return rows.every((row) => row[columnNames.group] === "a") && rows.length === 4;
        });
        await waitForReads("both brokers to read the pause state twice after the pause", [a, b], since);
        expect(seen.a, "rows of the paused group handled").toBe(0);
        expect(untouched(await fx.rows(table))).toBe(true);
        const state = await b.broker.controlState(table);
        expect({ paused: state.paused, pausedGroups: state.pausedGroups }).toEqual({
          paused: false,
          pausedGroups: ["a"],
        });
        await b.broker.resume(table, { group: "a" });
        await waitFor(
          "group a's rows to be handled after the resume",
          async () => (await fx.rows(table)).length === 0,
        );
        expect(seen).toEqual({ a: 4, b: 4 });
        expect((await a.broker.controlState(table)).pausedGroups).toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "rows in work when the table is paused finish and settle; rows published after it wait for the resume",
      async (fx) => {
        const form = formOf(await requireControls(fx));
        const table = await fx.table(form, { lease: 10, roles: ["attempt", "runAt"] });
        forgetControlsLater(fx, table);
        const counted = await countedBroker(fx);
        const gate = fx.gate();
        let started = 0;
        let handled = 0;
        await counted.broker.subscribe(
          table,
          async () => {
            started += 1;
            await gate.opened;
            handled += 1;
          },
          { workers: 2, batch: 1, pollInterval: POLL_MS },
        );
        await counted.broker.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
        await waitFor("both rows to be in work", () => started === 2);
        await counted.broker.pause(table);
        gate.open();
        await waitFor("the rows in work to settle", async () => (await fx.rows(table)).length === 0);
        const since = [counted.reads()];
        await counted.broker.publishMany(table, [{ payload: 3 }, { payload: 4 }]);
        await waitForReads("the broker to read the pause state twice", [counted], since);
        expect(handled).toBe(2);
        expect(untouched(await fx.rows(table))).toBe(true);
        await counted.broker.resume(table);
        await waitFor(
          "the rows published while paused to be handled",
          async () => (await fx.rows(table)).length === 0,
        );
        expect(handled).toBe(4);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "a pause outlives the broker that paused: a new broker does not claim until it is resumed",
      async (fx) => {
        const form = formOf(await requireControls(fx));
        const table = await fx.table(form, { lease: 10, roles: ["attempt", "runAt"] });
        forgetControlsLater(fx, table);
        const first = await fx.broker();
        await first.pause(table);
        await first.publishMany(table, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
        await first.close();
        const restarted = await countedBroker(fx);
        let handled = 0;
        await restarted.broker.subscribe(
          table,
          () => {
            handled += 1;
          },
          { pollInterval: POLL_MS },
        );
        await waitForReads("the new broker to read the pause state twice", [restarted], [0]);
        expect(handled).toBe(0);
        expect(untouched(await fx.rows(table))).toBe(true);
        expect((await restarted.broker.controlState(table)).paused).toBe(true);
        await restarted.broker.resume(table);
        await waitFor(
          "the rows to be handled after the resume",
          async () => (await fx.rows(table)).length === 0,
        );
        expect(handled).toBe(3);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "a rate limit of 50 per second shared by four processes keeps every span of windows within one window's limit of it (counted from processedAt)",
      async (fx) => {
        const form = formOf(await requireControls(fx));
        const table = await fx.table(form, { lease: 10, roles: ["attempt", "runAt", "processedAt"] });
        forgetControlsLater(fx, table);
        const limit = 50;
        const intervalMs = 1000;
        const total = 140;
        const subscribe = { workers: 8, pollInterval: 100, rateLimit: { limit, intervalMs } };
        const brokers: Broker[] = [];
        if (fx.harness.childDriverModule !== undefined) {
          // Four processes, as the limit is meant for.
          const children = [0, 1, 2, 3].map(() =>
            fx.child({ table: table.description, mode: "ack", subscribe }),
          );
          for (const child of children) await child.next("that it subscribed", isReady);
          brokers.push(await fx.broker());
        } else {
          // Without child processes: four brokers, each on a driver (a pool) of its own.
          for (let n = 0; n < 4; n += 1) {
            const broker = await fx.broker();
            await broker.subscribe(table, () => undefined, subscribe);
            brokers.push(broker);
          }
        }
        await brokers[0]?.publishMany(
          table,
          Array.from({ length: total }, (_, n) => ({ payload: n })),
        );
        const done = await waitFor(
          "every row to be processed",
          async () => {
            const rows = await fx.rows(table);
            const times = rows
              .map((row) => row[columnNames.processedAt])
              .filter((value) => value !== null && value !== undefined)
              .map((value) => new Date(value as string | number | Date).getTime());
            return times.length === total ? times : undefined;
          },
          { timeoutMs: 30_000 },
        );
        const perWindow = new Map<number, number>();
        for (const at of done) {
          const window = Math.floor(at / intervalMs);
          perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
        }
        const first = Math.min(...perWindow.keys());
        const last = Math.max(...perWindow.keys());
        // Rows counted near a window's end may be processed early in the next one: every span of
        // k windows holds at most k + 1 windows' limit, never what four uncounted brokers would take.
        for (let from = first; from <= last; from += 1) {
          let sum = 0;
          for (let to = from; to <= last; to += 1) {
            sum += perWindow.get(to) ?? 0;
            expect(sum, `rows processed in windows ${from - first}..${to - first}`).toBeLessThanOrEqual(
              (to - from + 2) * limit,
            );
          }
        }
        const state = await brokers[0]?.controlState(table);
        expect(state?.rates).toHaveLength(1);
        expect(state?.rates[0]).toMatchObject({ per: "table", limit, intervalMs });
        expect(state?.rates[0]?.used).toBeLessThanOrEqual(limit);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "bad pause and rateLimit options are refused with a code and write nothing",
      async (fx) => {
        const form = formOf(await requireControls(fx));
        const table = await fx.table(form, { lease: 10, roles: ["attempt", "runAt"] });
        forgetControlsLater(fx, table);
        const broker = await fx.broker();
        const code = async (promise: Promise<unknown>): Promise<string | undefined> => {
          try {
            await promise;
            return undefined;
          } catch (error) {
            return BrokerError.is(error) ? error.code : String(error);
          }
        };
        expect(await code(broker.pause(table, { grup: "a" } as never))).toBe("INVALID_ARGUMENT");
        expect(await code(broker.pause(table, { group: "a" }))).toBe("INVALID_ARGUMENT");
        expect(await code(broker.resume(table, { group: 7 } as never))).toBe("INVALID_ARGUMENT");
        expect((await broker.controlState(table)).paused).toBe(false);
        const refused = [
          { limit: 0, intervalMs: 1000 },
          { limit: 1.5, intervalMs: 1000 },
          { limit: 10, intervalMs: "1000" },
          { limit: 10 },
          { limit: 10, intervalMs: 1000, per: "key" },
          { limit: 10, intervalMs: 1000, per: "group" },
          { limit: 10, intervalMs: 1000, burst: 3 },
          "50/s",
        ];
        for (const rateLimit of refused) {
          expect(
            await code(broker.subscribe(table, () => undefined, { rateLimit: rateLimit as never })),
            JSON.stringify(rateLimit),
          ).toBe("DECLARATION");
        }
        expect(broker.subscriptions).toHaveLength(0);
        expect((await broker.controlState(table)).rates).toEqual([]);
      },
    );
  });
}
