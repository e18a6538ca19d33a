/**
 * The advisory lock form: rows sharing a key run one at a time while other keys run in
 * parallel, across brokers and across tables; the take counts the attempt.
 *
 * @module
 */
import { ack } from "@rowclaim/core";
import { expect } from "vitest";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import { subscribeGated } from "./gated.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames, describeTable } from "./tables.js";
import { toNumber } from "./values.js";
import { pause, waitFor, within } from "./wait.js";

const SUITE = "advisory";

/** The payloads of the key tests. */
interface Account {
  readonly account: string;
  readonly n: number;
}

/** Watches handlers in work by key: the most in work at once for one key, and for all keys. */
class KeyWatch {
  readonly #inWork = new Map<string, number>();
  maxPerKey = 0;
  maxKeysAtOnce = 0;
  done = 0;

  enter(key: string): void {
    const now = (this.#inWork.get(key) ?? 0) + 1;
    this.#inWork.set(key, now);
    this.maxPerKey = Math.max(this.maxPerKey, now);
    this.maxKeysAtOnce = Math.max(this.maxKeysAtOnce, this.keysInWork);
  }

  leave(key: string): void {
    const now = (this.#inWork.get(key) ?? 1) - 1;
    if (now === 0) this.#inWork.delete(key);
    else this.#inWork.set(key, now);
    this.done += 1;
  }

  get keysInWork(): number {
    return this.#inWork.size;
  }

  /** The handler's work: until another key is in work too (at most `maxMs`), then a little longer. */
  async work(maxMs: number): Promise<void> {
    const until = Date.now() + maxMs;
    while (this.keysInWork < 2 && Date.now() < until) await pause(10);
    await pause(50);
  }
}

/** Registers the advisory lock sub-suite (skipped where the driver does not offer the form). */
export function advisorySuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("advisory lock", () => {
    conformanceTest(
      harness,
      SUITE,
      "[advisory] rows sharing an advisory key run one at a time while other keys run in parallel",
      async (fx) => {
        await fx.requireForm("advisory");
        const table = await fx.table("advisory", { keyColumn: "account", extraColumns: ["account"] });
        const broker = await fx.broker();
        const watch = new KeyWatch();
        await broker.publishMany(
          table,
          ["a", "b", "c"].flatMap((account) =>
            [1, 2, 3].map((n) => ({ payload: { account, n }, values: { account } })),
          ),
        );
        await broker.subscribe<Account>(
          table,
          async (delivery) => {
            const key = delivery.payload.account;
            watch.enter(key);
            await watch.work(1500);
            watch.leave(key);
            return ack();
          },
          { workers: 6, pollInterval: 20 },
        );
        await waitFor("all nine rows to be handled", () => watch.done >= 9);
        expect(watch.maxPerKey, "rows sharing a key ran at the same time").toBe(1);
        expect(watch.maxKeysAtOnce, "rows of different keys never ran in parallel").toBeGreaterThanOrEqual(2);
        await waitFor("every row to be acked", async () => (await fx.rows(table)).length === 0);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] rows sharing an advisory key run one at a time across two brokers",
      async (fx) => {
        await fx.requireForm("advisory");
        const table = await fx.table("advisory", { keyColumn: "account", extraColumns: ["account"] });
        const brokers = [await fx.broker(), await fx.broker()];
        const watch = new KeyWatch();
        await brokers[0]?.publishMany(
          table,
          ["a", "b"].flatMap((account) =>
            [1, 2, 3].map((n) => ({ payload: { account, n }, values: { account } })),
          ),
        );
        for (const broker of brokers) {
          await broker.subscribe<Account>(
            table,
            async (delivery) => {
              const key = delivery.payload.account;
              watch.enter(key);
              await watch.work(1000);
              watch.leave(key);
            },
            { workers: 3, pollInterval: 20 },
          );
        }
        await waitFor("all six rows to be handled", () => watch.done >= 6);
        expect(watch.maxPerKey, "rows sharing a key ran at the same time on two brokers").toBe(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] a key belongs to the database: two tables whose keys match wait for each other",
      async (fx) => {
        await fx.requireForm("advisory");
        const first = await fx.table("advisory", { keyColumn: "account", extraColumns: ["account"] });
        // The second table's key template renders the same text as the first's: the first table's name, then the account.
        const second = await fx.tableFrom({
          ...describeTable("advisory", `${first.name}_b`, { extraColumns: ["account"] }),
          advisoryLock: `${first.name}-{account}`,
        });
        const broker = await fx.broker();
        const other = await fx.broker();
        const release = fx.gate();
        let firstStarted = false;
        let firstSettledAt = 0;
        await broker.subscribe(
          first,
          async () => {
            firstStarted = true;
            await release.opened;
            firstSettledAt = Date.now();
          },
          { pollInterval: 20 },
        );
        await broker.publish(first, "first", { values: { account: "shared" } });
        await waitFor("the first table's row to be in work", () => firstStarted);
        const seen: Seen[] = [];
        await other.subscribe(second, (delivery) => void see(seen, delivery), { pollInterval: 20 });
        await other.publish(second, "second", { values: { account: "shared" } });
        // Hold the first key a while (the handler's work), polling the second table all along.
        await pause(700);
        expect(seen, "the second table's row ran while the first table held the same key").toEqual([]);
        release.open();
        // Wait for both values the assertion reads: the first handler records its end only after the gate opens.
        await waitFor(
          "the first table's handler to finish and the second table's row to be delivered",
          () => firstSettledAt > 0 && seen.length > 0,
        );
        expect(
          seen[0]?.at,
          "the second table's row ran while the first table held the same key",
        ).toBeGreaterThanOrEqual(firstSettledAt);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] on a pool the user owns, a settled delivery unlocks its key and returns its connection to the pool",
      async (fx) => {
        await fx.requireForm("advisory");
        fx.requireUserPools();
        const table = await fx.table("advisory", { keyColumn: "account", extraColumns: ["account"] });
        const { broker, pool } = await fx.userPoolBroker();
        const release = fx.gate();
        const seen: Seen[] = [];
        await broker.subscribe(
          table,
          async (delivery) => {
            see(seen, delivery);
            await release.opened;
            return ack();
          },
          { pollInterval: 20 },
        );
        await broker.publish(table, "held", { values: { account: "one" } });
        await waitFor("the handler to start", () => seen.length > 0);
        const key = `${table.name}-one`;
        const keyHeld = harness.advisoryKeyHeld?.bind(harness);
        if (keyHeld !== undefined) {
          expect(
            await keyHeld(key),
            `the advisory key "${key}" is not held while its delivery is in work`,
          ).toBe(true);
        }
        release.open();
        await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
        // The settlement ran on the key's connection, then unlocked it and returned it to the pool.
        if (keyHeld !== undefined) {
          await waitFor(
            `the advisory key "${key}" to be unlocked after the settlement`,
            async () => !(await keyHeld(key)),
          );
        }
        await within("close() to return", broker.close());
        expect(
          await pool.checkedOut(),
          "connections the closed driver never returned to the user's pool",
        ).toBe(0);
        // A broker on another pool takes the next row of the key: nothing of the first still holds it.
        const next = await fx.userPoolBroker();
        const more: Seen[] = [];
        await next.broker.subscribe(table, (delivery) => void see(more, delivery), { pollInterval: 20 });
        await next.broker.publish(table, "next", { values: { account: "one" } });
        await waitFor("a broker on another pool to take the key's next row", () => more.length > 0);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] the take counts the attempt before the handler runs",
      async (fx) => {
        await fx.requireForm("advisory");
        const table = await fx.table("advisory");
        const broker = await fx.broker();
        const release = fx.gate();
        const seen: Seen[] = [];
        await broker.subscribe(
          table,
          async (delivery) => {
            see(seen, delivery);
            await release.opened;
          },
          { pollInterval: 50 },
        );
        await broker.publish(table, "taken");
        await waitFor("the handler to start", () => seen.length > 0);
        const [row] = await fx.rows(table);
        expect(toNumber(row?.[columnNames.attempt])).toBe(2);
        expect(seen[0]?.attempt).toBe(1);
        release.open();
        await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] once a delivery settled, the server shows its key unlocked (whichever connection claims next)",
      async (fx) => {
        const { key, keyHeld, gated } = await keyInWork(fx, "one");
        gated.release.open();
        await waitFor("the settlement to return", () => gated.subscription.stats.acked >= 1);
        // Asked of the server, not of the next claim: a session lock is re-entrant, so a key left
        // held is taken again by a claim that happens to run on the same pooled connection.
        await waitFor(
          `the key "${key}" to be unlocked once its delivery settled`,
          async () => !(await keyHeld(key)),
          {
            timeoutMs: 5000,
          },
        );
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] a NULL column renders as the empty string in the key (the server shows that key held while the row is in work)",
      async (fx) => {
        const { gated, table } = await keyInWork(fx, null);
        gated.release.open();
        await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
      },
    );
  });
}

/**
 * A row of a keyed advisory table (key `<table>-<account>`) in work at a gate, and its key seen
 * held from the server (`advisoryKeyHeld`; the test skips without it).
 */
async function keyInWork(fx: Fixture, account: string | null) {
  await fx.requireForm("advisory");
  const keyHeld = fx.harness.advisoryKeyHeld?.bind(fx.harness);
  if (keyHeld === undefined) {
    return fx.skip(
      `the ${fx.harness.name} harness gives no advisoryKeyHeld(), so no test can ask the server which key is held`,
    );
  }
  const table = await fx.table("advisory", { keyColumn: "account", extraColumns: ["account"] });
  const broker = await fx.broker();
  const gated = await subscribeGated(fx, broker, table, { pollInterval: 20 });
  await broker.publish(table, "held", { values: { account } });
  await waitFor("the handler to start", () => gated.seen.length > 0);
  // A NULL renders as the empty string.
  const key = `${table.name}-${account ?? ""}`;
  expect(await keyHeld(key), `the key "${key}" is not held while its delivery is in work`).toBe(true);
  return { key, keyHeld, gated, table };
}
