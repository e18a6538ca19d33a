import { ack, BrokerError, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { leaseExpiry } from "@rowclaim/core/driver";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import { leaseTable, openConnection, publishRow, tempDatabaseFile, uniqueName, waitFor } from "./support.js";

const temp = tempDatabaseFile();
afterAll(() => temp.remove());

/**
 * A lease table holding one row (`"x"`), a connection of the test's own to take the file's write
 * lock, and the lease claimer of a driver that never waits on a lock (busyTimeout 0) but retries
 * as `busyRetry` says.
 */
async function claimerBehindBlocker(busyRetry: { attempts: number; maxDelayMs: number }) {
  const blocker = openConnection(temp.file);
  const table = defineTable(leaseTable(uniqueName("busy")));
  blocker.exec(createSqliteDriver({ database: blocker }).schemaSql(table));
  const driver = createSqliteDriver({ filename: temp.file, busyTimeout: 0, busyRetry });
  const [id] = await driver.publish(table, [publishRow('"x"')], {});
  const claimer = await driver.open(table, { group: null, logger: silentLogger });
  if (claimer.form !== "lease") throw new Error("expected a lease claimer");
  return { blocker, table, driver, claimer, id };
}

describe("busy retry", () => {
  it("a claim that meets another connection's write lock is retried, not failed, and takes the row once the lock is gone", async () => {
    const { blocker, table, driver, claimer } = await claimerBehindBlocker({
      attempts: 1000,
      maxDelayMs: 20,
    });
    blocker.exec("BEGIN IMMEDIATE");
    const now = new Date();
    // The first try runs inside claim() and meets the lock held above.
    const claiming = claimer.claim({ limit: 1, now, expiry: leaseExpiry(now, 30) });
    blocker.exec("COMMIT");
    const claimed = await claiming;
    expect(claimed.map((c) => c.row.payload)).toEqual(["x"]);

    const [held] = claimed;
    if (held === undefined) throw new Error("nothing claimed");
    const later = new Date(held.token.expiry.getTime() + 1000);
    blocker.exec("BEGIN IMMEDIATE");
    const extending = claimer.extend([{ id: held.row.id, token: held.token }], later);
    blocker.exec("COMMIT");
    const [token] = await extending;
    expect(token).toEqual({ form: "lease", expiry: later });
    if (token === null || token === undefined) throw new Error("extension lost");

    blocker.exec("BEGIN IMMEDIATE");
    const settling = claimer.settle(held.row.id, token, { kind: "delete" });
    blocker.exec("COMMIT");
    await settling;
    expect(blocker.prepare(`SELECT count(*) AS n FROM "${table.name}"`).get()).toEqual({ n: 0 });
    blocker.close();
    await driver.close();
  });

  it("contention that outlasts every try fails with CONNECTION_TIMEOUT (SQLITE_BUSY as its cause), never as a lost row", async () => {
    const { blocker, driver, claimer, id } = await claimerBehindBlocker({ attempts: 3, maxDelayMs: 1 });
    const now = new Date();
    const [held] = await claimer.claim({ limit: 1, now, expiry: leaseExpiry(now, 30) });
    if (held === undefined || id === undefined) throw new Error("nothing claimed");
    blocker.exec("BEGIN IMMEDIATE");
    const error = await claimer
      .settle(held.row.id, held.token, { kind: "delete" })
      .catch((caught: unknown) => caught);
    expect(BrokerError.is(error, "CONNECTION_TIMEOUT")).toBe(true);
    expect(((error as Error).cause as { code?: string }).code).toMatch(/^SQLITE_BUSY/);
    blocker.exec("COMMIT");
    await claimer.settle(held.row.id, held.token, { kind: "delete" });
    blocker.close();
    await driver.close();
  });

  it.each(["deferred", "immediate", "exclusive"] as const)(
    "two brokers on one file drain it together under contention, each row once (%s claims)",
    async (mode) => {
      const table = defineTable(leaseTable(uniqueName("busy"), { mode }));
      const setup = openConnection(temp.file);
      setup.exec(createSqliteDriver({ database: setup }).schemaSql(table));
      const options = { filename: temp.file, busyTimeout: 0, busyRetry: { attempts: 10_000, maxDelayMs: 5 } };
      const brokers = [
        createBroker({ driver: createSqliteDriver(options), logger: silentLogger }),
        createBroker({ driver: createSqliteDriver(options), logger: silentLogger }),
      ];
      const seen: unknown[] = [];
      for (const broker of brokers) {
        await broker.subscribe(
          table,
          (delivery) => {
            seen.push(delivery.payload);
            return ack();
          },
          { workers: 4, batch: 3, pollInterval: 5 },
        );
      }
      const first = brokers[0];
      if (first === undefined) throw new Error("no broker");
      await first.publishMany(
        table,
        Array.from({ length: 300 }, (_, i) => ({ payload: i })),
      );
      await waitFor(
        () =>
          seen.length >= 300 &&
          (setup.prepare(`SELECT count(*) AS n FROM "${table.name}"`).get() as { n: number }).n === 0,
      );
      await Promise.all(brokers.map((broker) => broker.close()));
      expect(new Set(seen).size).toBe(300);
      expect(seen).toHaveLength(300);
      setup.close();
    },
  );
});
