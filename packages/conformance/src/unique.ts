/**
 * The unique jobs sub-suite: a table with a key column keeps at most one queued row per key,
 * whatever the mode and however many publishers race; a row in work gives up its key (the new
 * row queues behind it, the running one untouched); `publishMany` decides per row; processed
 * rows hold no key; bad input writes nothing. The cross-process race runs 4 child processes × 50
 * publishes each (20 × 50 with `ROWCLAIM_LOAD=1`), 20 in flight across them, skipped where the harness gives no
 * `childDriverModule`; the same race inside one process runs everywhere.
 *
 * @module
 */
import {
  BrokerError,
  type ClaimFormName,
  defineTable,
  type PublishResult,
  type TableDefinition,
  type UniqueMode,
  uniqueModes,
} from "@rowclaim/core";
import { expect } from "vitest";
import { isPublished } from "./child-process.js";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { columnNames, describeTable } from "./tables.js";
import { idKey } from "./values.js";
import { waitFor } from "./wait.js";

const SUITE = "unique";

/** The forms that take a key column (a row lock claim commits nothing while its handler runs). */
const keyForms: readonly ClaimFormName[] = ["lease", "advisory"];

/** Child processes of the cross-process race: 20 with `ROWCLAIM_LOAD=1`, else 4. */
const raceProcesses = (): number => (process.env.ROWCLAIM_LOAD === "1" ? 20 : 4);
const PUBLISHES_PER_PROCESS = 50;
/**
 * Publishes in flight across the race's children: each child keeps its share in flight, so that
 * 20 children with pools of their own stay within a server's connections (PostgreSQL's default
 * 100) beside the other tests running at the same time.
 */
const RACE_IN_FLIGHT = 20;

const modeOptions = (mode: UniqueMode): { mode: UniqueMode; period?: number } =>
  mode === "debounce" || mode === "throttle" ? { mode, period: 60_000 } : { mode };

async function keyTable(fx: Fixture, form: ClaimFormName, processedAt = false): Promise<TableDefinition> {
  await fx.requireForm(form);
  const roles = [
    "attempt",
    "runAt",
    "priority",
    "key",
    ...(processedAt ? (["processedAt"] as const) : []),
  ] as const;
  return fx.table(form, { roles: [...roles], lease: 5 });
}

async function queuedOfKey(
  fx: Fixture,
  table: TableDefinition,
  key: string,
): Promise<Record<string, unknown>[]> {
  return (await fx.rows(table)).filter((row) => row[columnNames.key] === key);
}

/** Registers the unique jobs sub-suite. */
export function uniqueSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("unique jobs", () => {
    conformanceTest(
      harness,
      SUITE,
      "a key column in the row lock form is refused with DECLARATION",
      async () => {
        const description = describeTable("rowLock", "rc_unique_rowlock", { roles: ["key"] });
        let caught: unknown;
        try {
          defineTable(description);
        } catch (error) {
          caught = error;
        }
        expect(BrokerError.is(caught, "DECLARATION")).toBe(true);
      },
    );

    for (const mode of uniqueModes) {
      conformanceTest(
        harness,
        SUITE,
        `[lease] ${mode}: concurrent publishes of one key from several processes leave exactly one queued row`,
        async (fx) => {
          fx.requireChildren();
          const table = await keyTable(fx, "lease");
          const children = Array.from({ length: raceProcesses() }, (_, n) =>
            fx.child({
              table: table.description,
              mode: "publish",
              payloads: Array.from({ length: PUBLISHES_PER_PROCESS }, (_, m) => ({ n, m })),
              unique: { key: "race", ...modeOptions(mode) },
              inFlight: Math.max(1, Math.floor(RACE_IN_FLIGHT / raceProcesses())),
            }),
          );
          const published = await Promise.all(
            children.map((child) => child.next("that it published", isPublished, 60_000)),
          );
          const rows = await fx.rows(table);
          expect(rows).toHaveLength(1);
          const id = idKey(rows[0]?.[columnNames.id]);
          for (const event of published) {
            expect(event.ids).toHaveLength(PUBLISHES_PER_PROCESS);
            for (const got of event.ids) expect(got).toBe(id);
          }
        },
      );

      for (const form of keyForms) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] ${mode}: concurrent publishes of one key from three brokers leave exactly one queued row`,
          async (fx) => {
            const table = await keyTable(fx, form);
            const brokers = [await fx.broker(), await fx.broker(), await fx.broker()];
            const results = await Promise.all(
              brokers.flatMap((broker, b) =>
                Array.from({ length: 20 }, (_, n) =>
                  broker.publish(table, { b, n }, { key: "race", ...modeOptions(mode) }),
                ),
              ),
            );
            const rows = await fx.rows(table);
            expect(rows).toHaveLength(1);
            const id = idKey(rows[0]?.[columnNames.id]);
            expect(new Set(results.map((result) => idKey(result.id)))).toEqual(new Set([id]));
            expect(results.filter((result) => result.outcome === "inserted")).toHaveLength(1);
            const other = mode === "replace" || mode === "debounce" ? "replaced" : "kept";
            expect(results.filter((result) => result.outcome === other)).toHaveLength(results.length - 1);
          },
        );
      }
    }

    for (const form of keyForms) {
      for (const mode of ["keep", "replace"] as const) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] ${mode}: a publish while the key's row is in work queues a new row behind it and leaves the running one untouched`,
          async (fx) => {
            const table = await keyTable(fx, form);
            const broker = await fx.broker();
            const first = await broker.publish(table, "first", { key: "k", mode });
            expect(first.outcome).toBe("inserted");
            const gate = fx.gate();
            const seen: Seen[] = [];
            await broker.subscribe(
              table,
              async (delivery) => {
                see(seen, delivery);
                if (delivery.payload === "first") await gate.opened;
              },
              { workers: 1, pollInterval: 20 },
            );
            await waitFor("the first row to be in work", () => seen.length >= 1);
            const second = await broker.publish(table, "second", { key: "k", mode });
            expect(second.outcome).toBe("inserted");
            expect(idKey(second.id)).not.toBe(idKey(first.id));
            const third = await broker.publish(table, "third", { key: "k", mode });
            if (mode === "keep") expect(third).toEqual({ id: second.id, outcome: "kept" });
            gate.open();
            const wanted = mode === "keep" ? ["first", "second"] : ["first", "third"];
            await waitFor("both rows to be handled", () => seen.length >= 2);
            await waitFor("the table to be empty", async () => (await fx.rows(table)).length === 0);
            expect(seen.map((s) => s.payload).sort()).toEqual(wanted);
            expect(seen.find((s) => s.payload === "first")?.id).toBe(idKey(first.id));
          },
        );
      }

      conformanceTest(harness, SUITE, `[${form}] processed rows do not hold their key`, async (fx) => {
        const table = await keyTable(fx, form, true);
        const broker = await fx.broker();
        const first = await broker.publish(table, "first", { key: "k" });
        const seen: Seen[] = [];
        await broker.subscribe(table, async (delivery) => void see(seen, delivery), { pollInterval: 20 });
        await waitFor("the row to be processed", async () => {
          const rows = await fx.rows(table);
          return rows.length === 1 && rows[0]?.[columnNames.processedAt] !== null ? true : undefined;
        });
        const second = await broker.publish(table, "second", { key: "k" });
        expect(second.outcome).toBe("inserted");
        expect(idKey(second.id)).not.toBe(idKey(first.id));
      });
    }

    conformanceTest(
      harness,
      SUITE,
      "[lease] publishMany decides per row and reports each outcome",
      async (fx) => {
        const table = await keyTable(fx, "lease");
        const broker = await fx.broker();
        const results: readonly PublishResult[] = await broker.publishMany(table, [
          { payload: "a", key: "one" },
          { payload: "b", key: "one" },
          { payload: "c", key: "two" },
          { payload: "d", key: "one", mode: "replace" },
        ]);
        expect(results.map((result) => result.outcome)).toEqual(["inserted", "kept", "inserted", "replaced"]);
        expect(idKey(results[1]?.id)).toBe(idKey(results[0]?.id));
        expect(idKey(results[3]?.id)).toBe(idKey(results[0]?.id));
        expect(await queuedOfKey(fx, table, "one")).toHaveLength(1);
        expect(await queuedOfKey(fx, table, "two")).toHaveLength(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] debounce pushes the run time back; throttle keeps the window's row",
      async (fx) => {
        const table = await keyTable(fx, "lease");
        const broker = await fx.broker();
        const before = Date.now();
        const first = await broker.publish(table, "a", { key: "d", mode: "debounce", period: 60_000 });
        const again = await broker.publish(table, "b", { key: "d", mode: "debounce", period: 120_000 });
        expect([first.outcome, again.outcome]).toEqual(["inserted", "replaced"]);
        const [debounced] = await queuedOfKey(fx, table, "d");
        expect(
          new Date(debounced?.[columnNames.runAt] as string | number | Date).getTime(),
        ).toBeGreaterThanOrEqual(before + 120_000 - 1000);
        const t1 = await broker.publish(table, "x", { key: "t", mode: "throttle", period: 3_600_000 });
        const t2 = await broker.publish(table, "y", { key: "t", mode: "throttle", period: 3_600_000 });
        expect([t1.outcome, t2.outcome]).toEqual(["inserted", "kept"]);
        expect(await queuedOfKey(fx, table, "t")).toHaveLength(1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "[lease] bad unique input is refused with INVALID_ARGUMENT and writes nothing",
      async (fx) => {
        const table = await keyTable(fx, "lease");
        const plain = await fx.table("lease");
        const broker = await fx.broker();
        const refused = async (attempt: () => Promise<unknown>): Promise<void> => {
          let caught: unknown;
          try {
            await attempt();
          } catch (error) {
            caught = error;
          }
          expect(BrokerError.is(caught, "INVALID_ARGUMENT"), String(caught)).toBe(true);
        };
        const loose = broker as unknown as {
          publish(table: TableDefinition, payload: unknown, options: unknown): Promise<unknown>;
          publishMany(table: TableDefinition, messages: unknown): Promise<unknown>;
        };
        await refused(() => loose.publish(table, 1, { key: "k", mode: "sometimes" }));
        await refused(() => loose.publish(plain, 1, { key: "k" }));
        await refused(() => loose.publish(table, 1, { key: "k", mode: "throttle", period: 0 }));
        await refused(() => loose.publish(table, 1, { key: "k", mode: "debounce", period: -5 }));
        await refused(() => loose.publish(table, 1, { key: 7 }));
        await refused(() => loose.publish(table, 1, { key: "" }));
        await refused(() => loose.publish(table, 1, { mode: "keep" }));
        await refused(() =>
          loose.publishMany(table, [
            { payload: 1, key: "k" },
            { payload: 2, key: "k", mode: "nope" },
          ]),
        );
        expect(await fx.rows(table)).toHaveLength(0);
        expect(await fx.rows(plain)).toHaveLength(0);
      },
    );
  });
}
