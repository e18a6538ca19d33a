// The conformance suite is a certificate only if a broken driver fails it. Each case below plants
// one deliberate defect (one a driver author could make) in the in-memory reference driver and
// runs the suite's test that must catch it: that test has to fail. A slow but correct variant
// must pass. No database is needed, so this runs in the conformance package itself; the built-in
// drivers keep only the cases that also prove their harness's hooks read the real server.
import type { Driver } from "@rowclaim/core";
import type { LeaseClaimer } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import { batchSuite } from "../src/batch.js";
import {
  brokenDriverTests,
  ignoringIsolation,
  replacingMember,
  withClaimerMethod,
  withOpen,
} from "../src/broken.js";
import { leaseSuite } from "../src/lease.js";
import { lockingSuite } from "../src/locking.js";
import type { MemoryAdvisoryClaimer, MemoryAdvisoryToken, MemoryDriver } from "../src/memory/index.js";
import { shutdownSuite } from "../src/shutdown.js";
import { transactionsSuite } from "../src/transactions.js";
import { memoryHarness } from "./memory-harness.js";

/** Broken: an advisory release returns the connection to the pool without unlocking the key. */
function releasingWithoutUnlock(driver: MemoryDriver): Driver {
  return withClaimerMethod<MemoryAdvisoryClaimer>(driver, "advisory", "release", () => {
    return async (token: MemoryAdvisoryToken) => token.connection.release();
  });
}

/** Broken: a lease claim waits behind rows locked elsewhere (FOR UPDATE without SKIP LOCKED). */
function withoutSkipLocked(driver: MemoryDriver): Driver {
  return withOpen(driver, async (table, options) => {
    const claimer = await driver.open(table, options);
    if (claimer.form !== "lease") return claimer;
    const lease = claimer as LeaseClaimer;
    return replacingMember(lease, "claim", async (request: Parameters<LeaseClaimer["claim"]>[0]) => {
      while ((driver.database.tableOf(table)?.locks.size ?? 0) > 0) await driver.database.nextUnlock();
      return lease.claim(request);
    });
  });
}

/** Broken: a lease settlement without its token fence (it settles whatever lease the row holds now). */
function settlingWithoutFence(driver: MemoryDriver): Driver {
  return withOpen(driver, async (table, options) => {
    const claimer = await driver.open(table, options);
    if (claimer.form !== "lease") return claimer;
    const lease = claimer as LeaseClaimer;
    const lockedUntil = table.columns.lockedUntil as string;
    return replacingMember(
      lease,
      "settle",
      async (...[id, token, settlement]: Parameters<LeaseClaimer["settle"]>) => {
        const row = driver.database
          .rows(table)
          .find((stored) => String(stored[table.columns.id]) === String(id));
        const now = row?.[lockedUntil];
        await lease.settle(id, now instanceof Date ? { form: "lease", expiry: now } : token, settlement);
      },
    );
  });
}

/** Slow but correct: every advisory settlement returns 300 ms after it was applied. */
function slowToReturnFromSettlements(driver: MemoryDriver): Driver {
  return withClaimerMethod<MemoryAdvisoryClaimer>(driver, "advisory", "settle", (claimer) => {
    return async (...args: Parameters<MemoryAdvisoryClaimer["settle"]>) => {
      await claimer.settle(...args);
      await new Promise((resolve) => setTimeout(resolve, 300));
    };
  });
}

describe("a driver that ignores the table's isolation fails the isolation tests", () => {
  const test = brokenDriverTests(
    memoryHarness({ name: "memory ignoring isolation", wrap: ignoringIsolation }),
    transactionsSuite,
  );
  it.each(["repeatable read", "serializable"])("fails at isolation %s", async (level) => {
    const title = `[rowLock] a row lock claim runs at the isolation "${level}" its table names, read from the server while the handler runs`;
    await expect(test(title).run()).rejects.toThrow(/ran at "read committed"/);
  });
});

describe("an advisory release that returns the connection without unlocking fails on a pool the user owns", () => {
  const test = brokenDriverTests(
    memoryHarness({ name: "memory releasing without unlock", wrap: releasingWithoutUnlock }),
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

describe("a lease claim without SKIP LOCKED fails the contention test", () => {
  const test = brokenDriverTests(
    memoryHarness({
      name: "memory lease claim without SKIP LOCKED",
      wrap: withoutSkipLocked,
      // Every claim through the broken claim(), none carrying acks.
      without: ["claimWithAcks"],
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

describe("a lease settlement without its token fence fails the taken-over lease test", () => {
  const test = brokenDriverTests(
    memoryHarness({
      name: "memory lease settlement without fence",
      wrap: settlingWithoutFence,
      // Every ack through the broken settle(), none through the (fenced) carried paths.
      without: ["claimWithAcks", "settleMany"],
    }),
    leaseSuite,
  );
  it("fails it", async () => {
    await expect(
      test(
        "[lease] a settlement whose lease was taken over fails with LEASE_LOST and changes nothing, while the new holder's settlement succeeds",
      ).run(),
    ).rejects.toThrow(/the first settlement should fail with LEASE_LOST/);
  });
});

describe("a slow but correct driver passes the tests that count settlements", () => {
  const test = brokenDriverTests(
    memoryHarness({
      name: "memory slow to return from settlements",
      wrap: slowToReturnFromSettlements,
      without: ["claimWithAcks"],
    }),
    batchSuite,
  );
  // The broker counts an ack once settle() returned, here 300 ms after the row is gone: a test
  // reading stats.acked as soon as the table is empty fails every time.
  it("passes [advisory] without batch, a claim takes up to workers rows", async () => {
    expect(await test("[advisory] without batch, a claim takes up to workers rows").run()).toBe("passed");
  });
});

describe("the unbroken reference driver passes every test the broken variants fail", () => {
  const harness = memoryHarness({ name: "memory" });
  const test = brokenDriverTests(harness, (h) => {
    transactionsSuite(h);
    shutdownSuite(h);
    lockingSuite(h);
    leaseSuite(h);
  });
  it.each([
    '[rowLock] a row lock claim runs at the isolation "serializable" its table names, read from the server while the handler runs',
    "[advisory] on a pool the user owns, close() gives a delivery in work up, returns every connection to the pool and leaves no key held",
    "[lease] a claim passes over a row another transaction holds locked and takes the others while the lock is held (SKIP LOCKED)",
    "[lease] a settlement whose lease was taken over fails with LEASE_LOST and changes nothing, while the new holder's settlement succeeds",
  ])("passes %s", async (title) => {
    expect(await test(title).run()).toBe("passed");
  });
});
