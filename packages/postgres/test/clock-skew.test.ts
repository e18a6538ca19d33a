/**
 * The clock-skew check of lease tables, against the real database clock, with the host clock
 * faked through `createBroker({ clock })` (the database client keeps the real timers).
 */
import { hostname } from "node:os";
import { ack, BrokerError, type ClockSkewError, createBroker, type Logger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PostgresDriver } from "../src/index.js";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

interface Logged {
  readonly level: "warn" | "error";
  readonly message: string;
  readonly details: Readonly<Record<string, unknown>> | undefined;
}

function recordingLogger(): Logger & { logged: Logged[] } {
  const logged: Logged[] = [];
  return {
    logged,
    warn(message, details) {
      logged.push({ level: "warn", message, details });
    },
    error(message, details) {
      logged.push({ level: "error", message, details });
    },
  };
}

/** A host clock running `offset.ms` ahead of the real one (negative: behind). */
function skewedClock(offset: { ms: number }): () => Date {
  return () => new Date(Date.now() + offset.ms);
}

/** The driver, counting how often the broker reads the database clock. */
function countingDriver(driver: PostgresDriver): PostgresDriver & { readings: () => number } {
  let readings = 0;
  return {
    ...driver,
    databaseTime: () => {
      readings += 1;
      return driver.databaseTime();
    },
    readings: () => readings,
  };
}

describe("a host clock beyond the refusal fraction of the lease is refused at subscribe", () => {
  it("subscribe fails with CLOCK_SKEW naming the skew, the host and the lease, and claims nothing", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_skew_refuse"), { lease: 4 }));
    const seed = createBroker({ driver: db.driver({ max: 2 }), logger: recordingLogger() });
    await seed.publish(table, { n: 1 });
    await seed.close();
    // 2 s ahead with a 4 s lease: beyond a quarter (1 s).
    const broker = createBroker({
      driver: db.driver({ max: 2 }),
      logger: recordingLogger(),
      clock: skewedClock({ ms: 2000 }),
    });
    const refused = await broker
      .subscribe(table, () => ack())
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(BrokerError.is(refused, "CLOCK_SKEW")).toBe(true);
    const error = refused as ClockSkewError;
    expect(error.skewMs).toBeGreaterThan(1000);
    expect(error.host).toBe(hostname());
    expect(error.leaseSeconds).toBe(4);
    const [row] = await db.rows(table);
    expect(row?.locked_until).toBeNull();
    await broker.close();
  });

  it("a host clock behind by as much is refused the same way", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_skew_behind"), { lease: 4 }));
    const broker = createBroker({
      driver: db.driver({ max: 2 }),
      logger: recordingLogger(),
      clock: skewedClock({ ms: -2000 }),
    });
    const refused = await broker.subscribe(table, () => ack()).catch((error: unknown) => error);
    expect(BrokerError.is(refused, "CLOCK_SKEW")).toBe(true);
    expect((refused as ClockSkewError).skewMs).toBeLessThan(-1000);
    await broker.close();
  });
});

describe("a host clock beyond the warning fraction of the lease warns and still claims", () => {
  it("subscribe warns once, naming the skew, and the row is delivered", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_skew_warn"), { lease: 20 }));
    const logger = recordingLogger();
    // 3 s ahead with a 20 s lease: beyond a tenth (2 s), within a quarter (5 s).
    const broker = createBroker({ driver: db.driver({ max: 2 }), logger, clock: skewedClock({ ms: 3000 }) });
    const seen: unknown[] = [];
    await broker.subscribe(table, (delivery) => {
      seen.push(delivery.payload);
      return ack();
    });
    const warnings = logger.logged.filter(
      (entry) => entry.level === "warn" && entry.details?.skewMs !== undefined,
    );
    expect(warnings).toHaveLength(1);
    expect(Number(warnings[0]?.details?.skewMs)).toBeGreaterThan(2000);
    expect(warnings[0]?.details?.host).toBe(hostname());
    await broker.publish(table, { n: 1 });
    await waitFor(() => seen.length === 1, { what: "the row delivered" });
    await broker.close();
  });
});

describe("a running subscription whose host clock drifts beyond the refusal fraction stops claiming until it agrees again", () => {
  it("logs CLOCK_SKEW once, claims nothing while skewed, and claims again once the clocks agree", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_skew_drift"), { lease: 4 }));
    const logger = recordingLogger();
    const offset = { ms: 0 };
    const driver = countingDriver(db.driver({ max: 3 }));
    const broker = createBroker({
      driver,
      logger,
      clock: skewedClock(offset),
      clockSkew: { intervalMs: 20 },
    });
    const seen: number[] = [];
    await broker.subscribe(
      table,
      (delivery) => {
        seen.push((delivery.payload as { n: number }).n);
        return ack();
      },
      { pollInterval: 20 },
    );
    await broker.publish(table, { n: 1 });
    await waitFor(() => seen.length === 1, { what: "the first row delivered" });

    offset.ms = 3000;
    await waitFor(() => logger.logged.some((entry) => entry.level === "error"), {
      what: "the refusal logged",
    });
    await broker.publish(table, { n: 2 });
    // The refusing subscription measures again before every claim: let it claim (and refuse) a few times.
    const after = driver.readings();
    await waitFor(() => driver.readings() >= after + 3, { what: "three more refused claims" });
    const [row] = await db.rows(table);
    expect(row?.locked_until).toBeNull();
    expect(seen).toEqual([1]);
    const refusals = logger.logged.filter((entry) => entry.level === "error");
    expect(refusals).toHaveLength(1);
    expect(refusals[0]?.details?.leaseSeconds).toBe(4);

    offset.ms = 0;
    await waitFor(() => seen.length === 2, { what: "the second row delivered once the clocks agree" });
    expect(seen).toEqual([1, 2]);
    await broker.close();
  });
});

describe("the clock-skew check can be turned off", () => {
  it("clockSkew: false subscribes whatever the host clock says", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_skew_off"), { lease: 4 }));
    const broker = createBroker({
      driver: db.driver({ max: 2 }),
      logger: recordingLogger(),
      clock: skewedClock({ ms: 60_000 }),
      clockSkew: false,
    });
    await broker.subscribe(table, () => ack());
    await broker.close();
  });
});
