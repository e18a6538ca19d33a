/**
 * Per-key limits of the advisory lock form (`advisoryLock: { key, limit }`): at most `limit` rows
 * of one rendered key in work at once, across brokers and processes, each slot a lock of its own
 * on `key#1` … `key#n`; a limit of 1 locks the rendered key itself, as the string form does; bad
 * limits are refused. Skipped where the driver does not declare `capabilities.advisoryLimit`.
 *
 * Rows in work are observed through the database: every handler publishes a row to a record table
 * as it starts and again as it finishes, so the record table's ids order every start and end of
 * every process as the database saw them (a handler's end is committed before its row is settled
 * and its slot unlocked, and the next take of the slot happens after that), and the most rows of
 * one key in work at once is read from that order. The slots' locks are sampled from the
 * database throughout where the harness gives `advisoryKeyHeld`. `ROWCLAIM_LOAD=1` runs a bigger
 * drain.
 *
 * @module
 */
import {
  ack,
  BrokerError,
  defineTable,
  MAX_ADVISORY_LIMIT,
  type TableDefinition,
  type TableDescription,
} from "@rowclaim/core";
import { advisoryRowKey, advisorySlotKey, type DriverCapabilities } from "@rowclaim/core/driver";
import { expect } from "vitest";
import { isClosed, isReady } from "./child-process.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { describeTable } from "./tables.js";
import { Gate, pause, waitFor } from "./wait.js";

const SUITE = "key limits";

/** A limited table's payload, also what the record table's rows carry. */
interface Job {
  readonly account: string;
  readonly n: number;
}

/** What a handler publishes to the record table as it starts and as it finishes. */
interface Phase {
  readonly row: string;
  readonly phase: "start" | "end";
  readonly payload: Job;
}

/** The drain's size: small in CI, bigger under `ROWCLAIM_LOAD=1`. */
function drainSize(): { readonly accounts: number; readonly perAccount: number; readonly workMs: number } {
  return process.env.ROWCLAIM_LOAD === "1"
    ? { accounts: 6, perAccount: 60, workMs: 20 }
    : { accounts: 4, perAccount: 12, workMs: 15 };
}

/** Skips the test unless the driver offers the advisory lock form and keeps per-key limits. */
async function requireLimits(fx: Fixture, harness: ConformanceHarness): Promise<DriverCapabilities> {
  const caps = await fx.requireForm("advisory");
  if (!caps.advisoryLimit) {
    return fx.skip(
      `the ${harness.name} driver does not keep per-key limits (capabilities.advisoryLimit): it refuses advisoryLock.limit above 1 at subscribe`,
    );
  }
  return caps;
}

/** An advisory table keyed by `account` (its keys start with the table's name) with `limit`. */
function limitedDescription(fx: Fixture, limit: number | undefined): TableDescription {
  const described = describeTable("advisory", fx.uniqueName(), { extraColumns: ["account"] });
  const key = `${described.name}-{account}`;
  return { ...described, advisoryLock: limit === undefined ? key : { key, limit } };
}

/** The record table: id and JSON payload only (a row lock table: nothing claims it). */
function recordTable(fx: Fixture): Promise<TableDefinition> {
  return fx.table("rowLock", { roles: [] });
}

/**
 * The most rows of one account in work at once, read from the record table in id order (the
 * database's order of every start and end), and whether every start has its end.
 */
async function mostInWork(
  fx: Fixture,
  record: TableDefinition,
): Promise<{ readonly most: Map<string, number>; readonly open: number; readonly starts: string[] }> {
  const rows = await fx.rows(record);
  const inWork = new Map<string, number>();
  const most = new Map<string, number>();
  const starts: string[] = [];
  let open = 0;
  for (const raw of rows) {
    const value = raw.payload;
    const phase = (typeof value === "string" ? JSON.parse(value) : value) as Phase;
    const account = phase.payload.account;
    const now = (inWork.get(account) ?? 0) + (phase.phase === "start" ? 1 : -1);
    inWork.set(account, now);
    most.set(account, Math.max(most.get(account) ?? 0, now));
    if (phase.phase === "start") {
      starts.push(phase.row);
      open += 1;
    } else open -= 1;
  }
  return { most, open, starts };
}

/** Registers the per-key limits sub-suite (skipped where the driver keeps no limits). */
export function keyLimitsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("per-key limits", () => {
    conformanceTest(
      harness,
      SUITE,
      "[advisory] a limit of 3 per key over 4 processes × 8 workers (4 brokers in one process where keys live in the process) never has more than 3 rows of one key in work, and every row is handled exactly once",
      async (fx) => {
        const caps = await requireLimits(fx, harness);
        if (harness.pools === "user") {
          return fx.skip(
            "the multi-process drain runs once, on the driver's own pools; on pools the user owns, the slot test checks what differs (every lock given back)",
          );
        }
        const size = drainSize();
        const accounts = Array.from({ length: size.accounts }, (_, n) => `a${n}`);
        // Keys kept in the process (SQLite): 4 brokers in this process, as only one process may
        // run advisory subscriptions on the database; elsewhere 4 child processes.
        const inProcess = caps.advisoryScope === "process" || harness.childDriverModule === undefined;
        const table = await fx.tableFrom(limitedDescription(fx, 3));
        const record = await recordTable(fx);
        const subscribe = { workers: 8, pollInterval: 20 };
        const children = inProcess
          ? []
          : [0, 1, 2, 3].map(() =>
              fx.child({
                table: table.description,
                mode: "ack",
                subscribe,
                workMs: size.workMs,
                record: record.description,
              }),
            );
        if (inProcess) {
          // Records go through a broker of their own, so that they never wait for a connection
          // the deliveries hold.
          const recorder = await fx.broker();
          for (let n = 0; n < 4; n += 1) {
            const broker = await fx.broker();
            await broker.subscribe<Job>(
              table,
              async (delivery) => {
                await recorder.publish(record, {
                  row: String(delivery.id),
                  phase: "start",
                  payload: delivery.payload,
                });
                await pause(size.workMs);
                await recorder.publish(record, {
                  row: String(delivery.id),
                  phase: "end",
                  payload: delivery.payload,
                });
                return ack();
              },
              subscribe,
            );
          }
        }
        for (const child of children) await child.next("that it subscribed", isReady);
        const publisher = await fx.broker();
        const ids = await publisher.publishMany(
          table,
          accounts.flatMap((account) =>
            Array.from({ length: size.perAccount }, (_, n) => ({
              payload: { account, n },
              values: { account },
            })),
          ),
        );
        // The slots' locks, sampled from the database until the table is empty: never a lock on
        // the bare key or on a slot past the limit, never more than 3 slots of one key.
        const keyHeld = harness.advisoryKeyHeld?.bind(harness);
        const sampled: number[] = [];
        const strays: string[] = [];
        await waitFor("every row to be handled", async () => {
          if (keyHeld !== undefined) {
            for (const account of accounts) {
              const key = `${table.name}-${account}`;
              const held = await Promise.all([1, 2, 3].map((slot) => keyHeld(advisorySlotKey(key, slot, 3))));
              sampled.push(held.filter(Boolean).length);
              for (const stray of [key, advisorySlotKey(key, 4, 4)]) {
                if (await keyHeld(stray)) strays.push(stray);
              }
            }
          }
          return (await fx.rows(table)).length === 0;
        });
        for (const child of children) child.kill("SIGTERM");
        for (const child of children) await child.next("that it closed", isClosed);
        const { most, open, starts } = await mostInWork(fx, record);
        expect([...starts].sort(), "every row handled exactly once").toEqual(ids.map(String).sort());
        expect(open, "handlers that started and never finished").toBe(0);
        expect(Math.max(...most.values()), "the most rows of one key in work at once").toBeLessThanOrEqual(3);
        expect(Math.max(0, ...sampled), "the most slots of one key held at once").toBeLessThanOrEqual(3);
        expect(strays, "locks held on the bare key or past the limit").toEqual([]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] with a limit of 3, three rows of one key run at once on slots key#1 to key#3, a fourth starts only after one of them finished, and every lock is given back",
      async (fx) => {
        await requireLimits(fx, harness);
        const table = await fx.tableFrom(limitedDescription(fx, 3));
        const record = await recordTable(fx);
        const broker = await fx.broker();
        const recorder = await fx.broker();
        const gates = new Map<number, Gate>();
        const started: number[] = [];
        // Starts recorded in the database: the record's ids order starts and ends, so the first
        // gate opens only once all three starts are there.
        let recordedStarts = 0;
        let released = false;
        const ids = await broker.publishMany(
          table,
          [0, 1, 2, 3, 4].map((n) => ({ payload: { account: "a", n }, values: { account: "a" } })),
        );
        await broker.subscribe<Job>(
          table,
          async (delivery) => {
            const gate = fx.gate();
            gates.set(delivery.payload.n, gate);
            started.push(delivery.payload.n);
            await recorder.publish(record, {
              row: String(delivery.id),
              phase: "start",
              payload: delivery.payload,
            });
            recordedStarts += 1;
            if (!released) await gate.opened;
            await recorder.publish(record, {
              row: String(delivery.id),
              phase: "end",
              payload: delivery.payload,
            });
            return ack();
          },
          { workers: 6, pollInterval: 20 },
        );
        await waitFor(
          "three rows of the key in work, their starts recorded",
          () => started.length === 3 && recordedStarts === 3,
        );
        const keyHeld = harness.advisoryKeyHeld?.bind(harness);
        if (keyHeld !== undefined) {
          const key = `${table.name}-a`;
          const slots = await Promise.all([1, 2, 3].map((slot) => keyHeld(advisorySlotKey(key, slot, 3))));
          expect(slots, "slots key#1 to key#3 held in the database").toEqual([true, true, true]);
          expect(await keyHeld(key), "the bare key held").toBe(false);
        }
        gates.get(started[0] ?? -1)?.open();
        await waitFor("a fourth row of the key in work", () => started.length === 4);
        released = true;
        for (const gate of gates.values()) gate.open();
        await waitFor("every row to be handled", async () => (await fx.rows(table)).length === 0);
        if (keyHeld !== undefined) {
          // Every settled delivery gave back both its locks (on a pool the user owns too).
          const key = `${table.name}-a`;
          const locks = [
            ...[1, 2, 3].map((slot) => advisorySlotKey(key, slot, 3)),
            ...ids.map((id) => advisoryRowKey(key, String(id))),
          ];
          await waitFor("every slot and row lock to be released", async () =>
            (await Promise.all(locks.map((lock) => keyHeld(lock)))).every((held) => !held),
          );
        }
        const { most, open } = await mostInWork(fx, record);
        expect(open).toBe(0);
        expect(most.get("a"), "the most rows of the key in work at once").toBe(3);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] a limit of 1 runs the rows of one key one at a time and locks the rendered key itself, as the string form does",
      async (fx) => {
        await requireLimits(fx, harness);
        const table = await fx.tableFrom(limitedDescription(fx, 1));
        expect(table.advisoryLimit).toBe(1);
        const record = await recordTable(fx);
        const broker = await fx.broker();
        const recorder = await fx.broker();
        const first = new Gate();
        fx.releaseFirst(async () => first.open());
        let calls = 0;
        await broker.publishMany(
          table,
          [0, 1, 2].map((n) => ({ payload: { account: "a", n }, values: { account: "a" } })),
        );
        await broker.subscribe<Job>(
          table,
          async (delivery) => {
            calls += 1;
            await recorder.publish(record, {
              row: String(delivery.id),
              phase: "start",
              payload: delivery.payload,
            });
            if (calls === 1) await first.opened;
            await recorder.publish(record, {
              row: String(delivery.id),
              phase: "end",
              payload: delivery.payload,
            });
            return ack();
          },
          { workers: 4, pollInterval: 20 },
        );
        await waitFor("the first row in work", () => calls === 1);
        const keyHeld = harness.advisoryKeyHeld?.bind(harness);
        if (keyHeld !== undefined) {
          const key = `${table.name}-a`;
          expect(await keyHeld(key), "the rendered key held").toBe(true);
          expect(await keyHeld(advisorySlotKey(key, 1, 2)), "a slot key held").toBe(false);
        }
        first.open();
        await waitFor("every row to be handled", async () => (await fx.rows(table)).length === 0);
        const { most, open } = await mostInWork(fx, record);
        expect(open).toBe(0);
        expect(most.get("a"), "the most rows of the key in work at once").toBe(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[advisory] a limit that is not a whole number from 1 to the largest is refused with DECLARATION naming advisoryLock.limit, before anything is written",
      async (fx) => {
        await fx.requireForm("advisory");
        const description = limitedDescription(fx, undefined);
        for (const limit of [0, -1, 1.5, MAX_ADVISORY_LIMIT + 1, "3", null]) {
          let refused: unknown;
          try {
            defineTable({
              ...description,
              advisoryLock: { key: `${description.name}-{account}`, limit } as unknown as { key: string },
            });
          } catch (error) {
            refused = error;
          }
          expect(BrokerError.is(refused, "DECLARATION"), `limit ${String(limit)} refused`).toBe(true);
          expect((refused as Error).message).toContain("advisoryLock.limit");
        }
      },
    );
  });
}
