// The conformance suite is a certificate only if a broken driver fails it. The suite's own
// certificate runs without a database, on broken variants of the in-memory reference driver
// (packages/conformance/test/memory-broken.test.ts). The cases kept here patch the MySQL/MariaDB
// driver in one small, deliberate way each and run the suite's test that must catch it, because
// they also prove what only the server can show: that this harness's hooks read the defect from
// the server itself (claimIsolation from INNODB_TRX, advisoryKeyHeld from IS_USED_LOCK,
// holdRowLock with a real FOR UPDATE) and that the version floor is the server's own.
import {
  brokenDriverTests,
  errorsSuite,
  ignoringIsolation,
  lockingSuite,
  replacingMember,
  shutdownSuite,
  transactionsSuite,
  withClaimerMethod,
} from "@rowclaim/conformance";
import type { Driver } from "@rowclaim/core";
import type { AdvisoryClaimer } from "@rowclaim/core/driver";
import type { Pool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { type ConnectionLike, createMysqlDriver } from "../src/index.js";
import { mysqlHarness } from "./conformance-harness.js";
import { mysqlUrl } from "./support.js";

const url = await mysqlUrl();

/** Broken: an advisory release returns the connection to the pool without RELEASE_LOCK. */
function releasingWithoutUnlock(driver: Driver): Driver {
  return withClaimerMethod<AdvisoryClaimer>(driver, "advisory", "release", () => {
    return async (token: { connection: ConnectionLike }) => {
      token.connection.release();
    };
  });
}

/** Broken: claims lock their rows with FOR UPDATE alone, waiting behind rows locked elsewhere. */
function withoutSkipLocked(pool: Pool): Pool {
  type Query = (options: unknown, ...rest: unknown[]) => unknown;
  const rewrite =
    (query: Query): Query =>
    (options, ...rest) => {
      if (typeof options === "object" && options !== null && "sql" in options) {
        const sql = String((options as { sql: unknown }).sql);
        return query({ ...options, sql: sql.replace("FOR UPDATE SKIP LOCKED", "FOR UPDATE") }, ...rest);
      }
      return query(options, ...rest);
    };
  const patchConnection = (connection: object): object =>
    replacingMember(connection, "query", rewrite((connection as { query: Query }).query.bind(connection)));
  const patched = replacingMember(pool, "query", rewrite(pool.query.bind(pool) as Query));
  return replacingMember(patched, "getConnection", async () => patchConnection(await pool.getConnection()));
}

describe("a driver that ignores the table's isolation fails the isolation tests", () => {
  const test = brokenDriverTests(
    mysqlHarness({ url, name: "mysql ignoring isolation", tablePrefix: "rcb_iso_", wrap: ignoringIsolation }),
    transactionsSuite,
  );
  it.each(["repeatable read", "serializable"])("fails at isolation %s", async (level) => {
    const title = `[rowLock] a row lock claim runs at the isolation "${level}" its table names, read from the server while the handler runs`;
    await expect(test(title).run()).rejects.toThrow(/ran at "read committed"/);
  });
});

describe("an advisory release that returns the connection without unlocking fails on a pool the user owns", () => {
  const test = brokenDriverTests(
    mysqlHarness({
      url,
      name: "mysql releasing without unlock",
      tablePrefix: "rcb_adv_",
      wrap: releasingWithoutUnlock,
    }),
    shutdownSuite,
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
  const harness = mysqlHarness({ url, name: "mysql without a version check", tablePrefix: "rcb_ver_" });
  const test = brokenDriverTests(
    {
      ...harness,
      olderServer: {
        version: "MariaDB 10.5.27",
        // Told nothing of the old server, as a driver that never reads the version: it takes every table.
        createDriver: () => createMysqlDriver({ url, connectionLimit: 4 }),
        refuses: () => true,
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
    mysqlHarness({
      url,
      name: "mysql lease claim without SKIP LOCKED",
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
