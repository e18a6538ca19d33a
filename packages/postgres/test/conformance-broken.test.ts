// The conformance suite is a certificate only if a broken driver fails it. The suite's own
// certificate runs without a database, on broken variants of the in-memory reference driver
// (packages/conformance/test/memory-broken.test.ts). The cases kept here patch the PostgreSQL
// driver in one small, deliberate way each and run the suite's test that must catch it, because
// they also prove what only the server can show: that this harness's hooks read the defect from
// PostgreSQL itself (claimIsolation from the locking session, advisoryKeyHeld from pg_locks,
// holdRowLock with a real FOR UPDATE) and that the version floor is PostgreSQL's own.
import {
  advisorySuite,
  brokenDriverTests,
  errorsSuite,
  ignoringIsolation,
  lockingSuite,
  shutdownSuite,
  transactionsSuite,
  withClaimerMethod,
} from "@rowclaim/conformance";
import type { Driver } from "@rowclaim/core";
import type { AdvisoryClaimer } from "@rowclaim/core/driver";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createPostgresDriver, type PostgresAdvisoryToken } from "../src/index.js";
import { postgresHarness } from "./conformance-harness.js";
import { testUrl } from "./helpers.js";

const url = await testUrl();

/** Broken: an advisory release returns the connection to the pool without unlocking the key. */
function releasingWithoutUnlock(driver: Driver): Driver {
  return withClaimerMethod<AdvisoryClaimer<PostgresAdvisoryToken>>(driver, "advisory", "release", () => {
    return async (token: PostgresAdvisoryToken) => {
      token.connection.release();
    };
  });
}

/** Broken: the lease claim locks its rows with FOR UPDATE alone, waiting behind rows locked elsewhere. */
function withoutSkipLocked(pool: pg.Pool): pg.Pool {
  type Query = (config: unknown, ...rest: unknown[]) => unknown;
  const rewrite =
    (query: Query): Query =>
    (config, ...rest) => {
      if (typeof config === "object" && config !== null && "text" in config) {
        const text = String((config as { text: unknown }).text);
        if (text.includes("rc_pick")) {
          return query({ ...config, text: text.replace("FOR UPDATE SKIP LOCKED", "FOR UPDATE") }, ...rest);
        }
      }
      return query(config, ...rest);
    };
  const patch = <T extends object>(target: T, connect: boolean): T =>
    new Proxy(target, {
      get(inner, property) {
        const value: unknown = Reflect.get(inner, property, inner);
        if (typeof value !== "function") return value;
        const bound = value.bind(inner) as Query;
        if (property === "query") return rewrite(bound);
        if (property === "connect" && connect) {
          return async () => patch((await bound(undefined)) as pg.PoolClient, false);
        }
        return bound;
      },
    });
  return patch(pool, true);
}

describe("a driver that ignores the table's isolation fails the isolation tests", () => {
  const test = brokenDriverTests(
    postgresHarness({
      url,
      name: "postgres ignoring isolation",
      tablePrefix: "rcb_iso_",
      wrap: ignoringIsolation,
    }),
    transactionsSuite,
  );
  it.each(["repeatable read", "serializable"])("fails at isolation %s", async (level) => {
    const title = `[rowLock] a row lock claim runs at the isolation "${level}" its table names, read from the server while the handler runs`;
    await expect(test(title).run()).rejects.toThrow(/ran at "read committed"/);
  });
});

describe("an advisory release that returns the connection without unlocking fails on a pool the user owns", () => {
  const test = brokenDriverTests(
    postgresHarness({
      url,
      name: "postgres releasing without unlock",
      tablePrefix: "rcb_adv_",
      wrap: releasingWithoutUnlock,
    }),
    (harness) => {
      shutdownSuite(harness);
      advisorySuite(harness);
    },
  );
  it("fails the close() test on a pool the user owns", async () => {
    await expect(
      test(
        "[advisory] on a pool the user owns, close() gives a delivery in work up, returns every connection to the pool and leaves no key held",
      ).run(),
    ).rejects.toThrow(/is still held after close\(\) gave its delivery up/);
  });
});

describe("a driver without a version check fails the SERVER_TOO_OLD test", () => {
  const harness = postgresHarness({ url, name: "postgres without a version check", tablePrefix: "rcb_ver_" });
  const test = brokenDriverTests(
    {
      ...harness,
      olderServer: {
        version: "PostgreSQL 10.23",
        // Told nothing of the old server, as a driver that never reads the version: it takes every table.
        createDriver: () => createPostgresDriver({ url, max: 4 }),
        refuses: (table) => table.form === "advisory" || table.fifo,
      },
    },
    errorsSuite,
  );
  it("fails it", async () => {
    await expect(
      test(
        "a subscription on a server older than the driver's floor fails at startup with SERVER_TOO_OLD for every table the floor covers, and claims nothing",
      ).run(),
    ).rejects.toThrow(/expected SERVER_TOO_OLD/);
  });
});

describe("a lease claim without SKIP LOCKED fails the contention test", () => {
  const test = brokenDriverTests(
    postgresHarness({
      url,
      name: "postgres lease claim without SKIP LOCKED",
      tablePrefix: "rcb_skip_",
      pools: "user",
      wrapPool: withoutSkipLocked,
    }),
    lockingSuite,
  );
  it("fails it", async () => {
    await expect(
      test(
        "[lease] a claim passes over a row another transaction holds locked and takes the others while the lock is held (SKIP LOCKED)",
      ).run(),
    ).rejects.toThrow(/while the first row is still locked/);
  }, 60_000);
});
