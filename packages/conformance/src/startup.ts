/**
 * A subscription's start-up under faults: the server ends the driver's sessions just before
 * each statement `subscribe` runs, in turn (a restart, a failover, a killed connection during a
 * deploy), and a server that refuses connections at first (a container started before its
 * database). `subscribe` must reject with `CONNECTION_LOST` (never `SCHEMA` or a raw error) when
 * it fails fast, succeed when it retries, and no error may escape as an uncaught exception (a
 * client's `error` event with no listener ends the process).
 *
 * Each form has the fault tests twice: before every start-up statement in turn (the full loop,
 * dozens of statements on PostgreSQL), and before the first statement of each kind only (the
 * same statement sent again is one kind), which a harness that opts out of the full loop in its
 * short runs still passes.
 *
 * @module
 */
import {
  ack,
  type Broker,
  BrokerError,
  type ClaimFormName,
  type Driver,
  type TableDefinition,
} from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import type { Fixture } from "./fixture.js";
import { publishNumbered } from "./gated.js";
import type { ConformanceHarness, SessionFaultDriver } from "./harness.js";
import { RefusingProxy } from "./refusing-proxy.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms } from "./tables.js";
import { waitFor } from "./wait.js";

const SUITE = "start";

/** Records what escapes as an uncaught exception or an unhandled rejection while `body` runs. */
async function watchingEscapes(body: (escaped: readonly unknown[]) => Promise<void>): Promise<void> {
  const escaped: unknown[] = [];
  const record = (error: unknown): void => {
    escaped.push(error);
  };
  process.on("uncaughtException", record);
  process.on("unhandledRejection", record);
  try {
    await body(escaped);
    expect(escaped, "errors that escaped as uncaught exceptions or unhandled rejections").toEqual([]);
  } finally {
    process.off("uncaughtException", record);
    process.off("unhandledRejection", record);
  }
}

/** The start-up fault hook, or a skip saying the harness has none. */
function requireFaults(fx: Fixture): (killAt?: number) => Promise<SessionFaultDriver> {
  const create = fx.harness.createSessionFaultDriver?.bind(fx.harness);
  if (create === undefined) {
    return fx.skip(
      `the ${fx.harness.name} harness gives no createSessionFaultDriver(), so no test can end the driver's sessions at a chosen statement`,
    );
  }
  return async (killAt) => {
    const faulty = await create(killAt === undefined ? {} : { killAt });
    fx.endLater(faulty);
    return faulty;
  };
}

/** A table of `form` with one row (so that start-up probes which need a row run), and a handler that never settles on its own. */
async function tableWithRow(fx: Fixture, form: ClaimFormName): Promise<TableDefinition> {
  const table = await fx.table(form, { lease: 1 });
  await publishNumbered(await fx.broker(), table, 1);
  return table;
}

/** How many handlers a {@link subscribeHeld} subscription started. */
interface Started {
  count: number;
}

/**
 * Subscribes to `table`, handlers counting into `started` and then waiting until the test ends;
 * rejects as `subscribe` does.
 */
async function subscribeHeld(
  fx: Fixture,
  broker: Broker,
  table: TableDefinition,
  started: Started = { count: 0 },
): Promise<void> {
  const gate = fx.gate();
  await broker.subscribe(
    table,
    async () => {
      started.count += 1;
      await gate.opened;
      return ack();
    },
    { pollInterval: 50 },
  );
}

/**
 * `driver`, noting how many statements it had sent when its start-up calls returned (`open`,
 * and `databaseTime`, which the broker reads for a lease table's clock-skew check): the count
 * at the end of the start-up proper, before a listener or the first claim.
 */
function noteStartupEnd(driver: Driver, statements: () => number): { driver: Driver; sent(): number } {
  let sent = 0;
  const noted =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const result = await call(...args);
      sent = statements();
      return result;
    };
  const wrapped = new Proxy(driver, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      return property === "open" || property === "databaseTime"
        ? noted(bound as (...args: unknown[]) => Promise<unknown>)
        : bound;
    },
  });
  return { driver: wrapped, sent: () => sent };
}

/** What a subscription's start-up sends, from {@link countStartup}. */
interface StartupStatements {
  /** How many statements the start-up proper sends (the server and table checks, the probes, a lease table's clock read). */
  readonly required: number;
  /** How many statements it sends in all before `subscribe` resolves (a LISTEN's statements too, and maybe a first claim's). */
  readonly all: number;
  /**
   * The position (from 1) of the first statement of each kind among all of them, in order; every
   * position when the harness does not say what it sent.
   */
  readonly firstOfEachKind: readonly number[];
}

/**
 * Counts the statements the driver sends in a subscription's start-up proper and in all before
 * `subscribe` resolves, and finds the first statement of each kind.
 */
async function countStartup(
  fx: Fixture,
  create: (killAt?: number) => Promise<SessionFaultDriver>,
  table: TableDefinition,
): Promise<StartupStatements> {
  const faulty = await create();
  const noted = noteStartupEnd(faulty.driver, () => faulty.statements());
  const broker = fx.brokerOn(noted.driver, { startupRetry: false });
  await subscribeHeld(fx, broker, table);
  const all = faulty.statements();
  const texts = faulty.sent?.().slice(0, all);
  await broker.close({ timeout: 0 });
  const required = noted.sent();
  expect(required, "statements subscribe's start-up sends").toBeGreaterThan(0);
  const positions = Array.from({ length: all }, (_, n) => n + 1);
  if (texts === undefined || texts.length !== all) return { required, all, firstOfEachKind: positions };
  const kinds = new Set<string>();
  const firstOfEachKind = positions.filter((position) => {
    const kind = statementKind(texts[position - 1] ?? "");
    if (kinds.has(kind)) return false;
    kinds.add(kind);
    return true;
  });
  return { required, all, firstOfEachKind };
}

/**
 * A statement's kind: its text with every quoted name, string literal, number and parameter
 * replaced, so that the same statement again (on another session, with other values, under
 * another prepared name) is one kind; a `PREPARE` or a `DEALLOCATE` is one kind whatever it
 * names, since the driver handles their failure alike.
 */
function statementKind(sql: string): string {
  const prepared = /^\s*(PREPARE|DEALLOCATE)\b/i.exec(sql);
  if (prepared?.[1] !== undefined) return prepared[1].toUpperCase();
  return sql
    .replace(/"(?:[^"]|"")*"|`(?:[^`]|``)*`/g, "name")
    .replace(/'(?:[^']|'')*'/g, "text")
    .replace(/\$\d+|\?/g, "param")
    .replace(/\b\d+\b/g, "number")
    .replace(/\s+/g, " ")
    .trim();
}

/** Which start-up statements a start-up fault test ends the sessions before. */
type StartupScope = "every" | "sample";

/** The start-up statements in `scope` among the first `count` of `statements`. */
function inScope(statements: StartupStatements, scope: StartupScope, count: number): readonly number[] {
  const chosen =
    scope === "every" ? Array.from({ length: statements.all }, (_, n) => n + 1) : statements.firstOfEachKind;
  return chosen.filter((position) => position <= count);
}

/** How a start-up fault test names the statements it ends the sessions before. */
const scopeNames: Readonly<Record<StartupScope, string>> = Object.freeze({
  every: "each start-up statement in turn",
  sample: "the first start-up statement of each kind",
});

/**
 * The two start-up fault tests of `form` over the statements of `scope`: failing fast, and
 * retrying. The `every` tests are the full loop (long on a server database: a harness may opt out
 * of them in short runs); the `sample` tests end the sessions before the first statement of each
 * kind only.
 */
function startupFaultTests(harness: ConformanceHarness, form: ClaimFormName, scope: StartupScope): void {
  conformanceTest(
    harness,
    SUITE,
    `[${form}] with sessions ended before ${scopeNames[scope]}, subscribe (failing fast) rejects with CONNECTION_LOST or starts a working subscription, and no error escapes`,
    async (fx) => {
      await fx.requireForm(form);
      const create = requireFaults(fx);
      const table = await tableWithRow(fx, form);
      await watchingEscapes(async () => {
        const statements = await countStartup(fx, create, table);
        const { all } = statements;
        for (const killAt of inScope(statements, scope, all)) {
          const faulty = await create(killAt);
          const broker = fx.brokerOn(faulty.driver, { startupRetry: false });
          const started: Started = { count: 0 };
          const error = await caught(() => subscribeHeld(fx, broker, table, started));
          if (error === undefined) {
            // A statement whose failure decides nothing (a probe's closing ROLLBACK, a LISTEN,
            // the first claim) may fail without failing the start-up: the subscription must
            // then work, on the connections the pool has left.
            await waitFor(
              `the row delivered by a subscription that started with sessions ended before statement ${killAt} of ${all}`,
              () => started.count > 0,
            );
          } else {
            const got = BrokerError.is(error) ? error.code : String(error);
            expect(
              BrokerError.is(error, "CONNECTION_LOST"),
              `sessions ended before statement ${killAt} of ${all}: expected CONNECTION_LOST, got ${got}`,
            ).toBe(true);
          }
          await broker.close({ timeout: 0 });
        }
      });
    },
    { timeoutMs: 240_000 },
  );

  conformanceTest(
    harness,
    SUITE,
    `[${form}] with sessions ended before ${scopeNames[scope]}, subscribe (retrying) starts the subscription`,
    async (fx) => {
      await fx.requireForm(form);
      const create = requireFaults(fx);
      const table = await tableWithRow(fx, form);
      await watchingEscapes(async () => {
        const statements = await countStartup(fx, create, table);
        for (const killAt of inScope(statements, scope, statements.required)) {
          const faulty = await create(killAt);
          const broker = fx.brokerOn(faulty.driver, { startupRetry: { timeout: 60_000 } });
          const error = await caught(() => subscribeHeld(fx, broker, table));
          const got = BrokerError.is(error) ? error.code : String(error);
          expect(error, `sessions ended before statement ${killAt}: subscribe failed with ${got}`).toBe(
            undefined,
          );
          await broker.close({ timeout: 0 });
        }
      });
    },
    { timeoutMs: 240_000 },
  );
}

/** Registers the start-up sub-suite. */
export function startupSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("start-up", () => {
    for (const form of allForms) {
      startupFaultTests(harness, form, "sample");
      startupFaultTests(harness, form, "every");
    }

    conformanceTest(
      harness,
      SUITE,
      "subscribe while the server refuses connections waits, retrying, and starts once the server answers",
      async (fx) => {
        const { proxy, driverAt } = await refusingServer(fx);
        const form = await firstForm(fx);
        const table = await fx.table(form, { lease: 30 });
        const broker = fx.brokerOn(await driverAt(), { startupRetry: { timeout: 60_000 } });
        const handled: unknown[] = [];
        let state: "pending" | "started" | "failed" = "pending";
        const started = broker
          .subscribe(table, (delivery) => {
            handled.push(delivery.payload);
            return ack();
          })
          .then(
            () => {
              state = "started";
            },
            (error: unknown) => {
              state = "failed";
              throw error;
            },
          );
        await waitFor("the proxy to refuse two connections", () => proxy.refused >= 2);
        expect(state, "subscribe while the server refuses connections").toBe("pending");
        proxy.forward();
        await started;
        await publishNumbered(await fx.broker(), table, 1);
        await waitFor("the row to be handled through the proxy", () => handled.length === 1);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "with startupRetry: false, subscribe while the server refuses connections rejects with CONNECTION_LOST",
      async (fx) => {
        const { driverAt } = await refusingServer(fx);
        const table = await fx.table(await firstForm(fx), { lease: 30 });
        const broker = fx.brokerOn(await driverAt(), { startupRetry: false });
        expectCode(await caught(() => broker.subscribe(table, () => ack())), "CONNECTION_LOST");
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "close() while subscribe retries its start-up ends the subscribe with CLOSED",
      async (fx) => {
        const { proxy, driverAt } = await refusingServer(fx);
        const table = await fx.table(await firstForm(fx), { lease: 30 });
        const broker = fx.brokerOn(await driverAt(), { startupRetry: { timeout: 60_000 } });
        const subscribing = caught(() => broker.subscribe(table, () => ack()));
        await waitFor("the proxy to refuse a connection", () => proxy.refused >= 1);
        await broker.close({ timeout: 1000 });
        expectCode(await subscribing, "CLOSED");
      },
    );
  });
}

/** A refusing proxy in front of the harness's server (ended after the test), or a skip. */
async function refusingServer(
  fx: Fixture,
): Promise<{ readonly proxy: RefusingProxy; readonly driverAt: () => Promise<Driver> }> {
  const { serverAddress } = fx.harness;
  const createAt = fx.harness.createDriverAt?.bind(fx.harness);
  if (serverAddress === undefined || createAt === undefined) {
    return fx.skip(
      `the ${fx.harness.name} harness gives no serverAddress and createDriverAt(), so no test can put a server that does not answer yet in front of the driver`,
    );
  }
  const proxy = await RefusingProxy.start(serverAddress);
  fx.endLater({ end: () => proxy.close() });
  return { proxy, driverAt: async () => createAt(proxy.address) };
}

/** The first form the driver offers. */
async function firstForm(fx: Fixture): Promise<ClaimFormName> {
  const { forms } = await fx.capabilities();
  const form = forms[0];
  if (form === undefined) return fx.skip(`the ${fx.harness.name} driver offers no form`);
  return form;
}
