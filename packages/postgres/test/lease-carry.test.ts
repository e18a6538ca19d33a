/**
 * A lease claim carries the acks waiting for it (core's `claimWithAcks`): called on the claimer,
 * the acks (each row fenced by its own token) and the claim commit together, the claim never
 * takes an acked row, and a failure commits nothing; through a broker, a worker acking row after
 * row settles every row once and in order. Which claims carry acks is core's to decide, tested
 * without a database in core's `ack-carrier.test.ts`.
 */
import { BrokerError, createBroker, silentLogger, type TableDefinition } from "@rowclaim/core";
import { type HeldLease, leaseExpiry } from "@rowclaim/core/driver";
import { countingDriver } from "@rowclaim/tooling/claimer-calls";
import { describe, expect, it } from "vitest";
import { quoteIdent } from "../src/index.js";
import type { PostgresLeaseClaimer } from "../src/lease.js";
import { describeTable, fullColumns, openClaimer, publishRows, TestDb, uniqueName } from "./helpers.js";

const db = TestDb.forFile();

function ref(table: TableDefinition): string {
  return quoteIdent(table.name);
}

/** A claim request for up to `limit` rows, leased 30 seconds from now. */
function request(limit: number) {
  const now = new Date();
  return { limit, now, expiry: leaseExpiry(now, 30) };
}

/** Claims up to `limit` rows and returns them as held leases. */
async function hold(claimer: PostgresLeaseClaimer, limit: number): Promise<HeldLease[]> {
  return (await claimer.claim(request(limit))).map(({ row, token }) => ({ id: row.id, token }));
}

describe("a lease claim that carries acks (claimWithAcks)", () => {
  it("settles the acked rows and claims other rows, never an acked one", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_lcarry"), { lease: 30 }));
    const driver = db.driver();
    await publishRows(driver, table, 4);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = await hold(claimer, 2);
    const result = await claimer.claimWithAcks({ rows: held, settlement: { kind: "delete" } }, request(10));
    expect(result.settled).toEqual([true, true]);
    expect(result.claimed.map(({ row }) => row.payload)).toEqual([2, 3]);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([2, 3]);
    await claimer.close();
    await driver.close();
  });

  it("a row whose lease was taken over comes back false and unchanged, the others are settled", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_lcarry"), { lease: 30 }));
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = await hold(claimer, 2);
    const stolen = held[1]?.id;
    await db.query(`UPDATE ${ref(table)} SET locked_until = locked_until + interval '1 hour' WHERE id = $1`, [
      stolen,
    ]);
    const before = await db.query(`SELECT * FROM ${ref(table)} WHERE id = $1`, [stolen]);
    const result = await claimer.claimWithAcks({ rows: held, settlement: { kind: "delete" } }, request(10));
    expect(result.settled).toEqual([true, false]);
    expect(result.claimed.map(({ row }) => row.payload)).toEqual([2]);
    expect(before).toHaveLength(1);
    expect(await db.query(`SELECT * FROM ${ref(table)} WHERE id = $1`, [stolen])).toEqual(before);
    await claimer.close();
    await driver.close();
  });

  it("a single ack (sent as one id and token) whose lease was taken over comes back false and unchanged, and the claim passes over its row", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_lcarry"), { lease: 30 }));
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = await hold(claimer, 1);
    // Taken over by a claim whose lease has already run out: due again, yet not this ack's to settle.
    await db.query(`UPDATE ${ref(table)} SET locked_until = now() - interval '1 second' WHERE id = $1`, [
      held[0]?.id,
    ]);
    const before = await db.rows(table);
    const result = await claimer.claimWithAcks({ rows: held, settlement: { kind: "delete" } }, request(10));
    expect(result.settled).toEqual([false]);
    expect(result.claimed.map(({ row }) => row.payload)).toEqual([1, 2]);
    expect((await db.rows(table)).find((row) => row.id === held[0]?.id)).toEqual(
      before.find((row) => row.id === held[0]?.id),
    );
    await claimer.close();
    await driver.close();
  });

  it("an ack the database refuses rejects with its code, and neither the acks nor the claim are committed", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_lcarry"), { lease: 30 }));
    const guard = uniqueName("rc_lcarry_ref");
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = await hold(claimer, 1);
    // The held row is referenced from another table: deleting it breaks the foreign key.
    await db.query(
      `CREATE TABLE ${quoteIdent(guard)} (ref bigint REFERENCES ${ref(table)} (id) ON DELETE RESTRICT)`,
    );
    try {
      await db.query(`INSERT INTO ${quoteIdent(guard)} VALUES ($1)`, [held[0]?.id]);
      const before = await db.rows(table);
      const code = await claimer
        .claimWithAcks({ rows: held, settlement: { kind: "delete" } }, request(10))
        .then(
          () => "resolved",
          (error: unknown) => (BrokerError.is(error) ? error.code : `raw ${String(error)}`),
        );
      expect(code).toBe("CONSTRAINT");
      expect(await db.rows(table)).toEqual(before);
      // The claim's rows were not leased: a claim takes both again.
      expect((await hold(claimer, 10)).map((lease) => lease.id)).toHaveLength(2);
    } finally {
      await db.query(`DROP TABLE IF EXISTS ${quoteIdent(guard)}`);
    }
    await claimer.close();
    await driver.close();
  });
});

describe("a lease claim that carries acks, on other tables", () => {
  it("markProcessed writes processedAt and clears lockedUntil on the acked rows; the claim takes the others", async () => {
    const table = await db.create(
      describeTable("lease", uniqueName("rc_lcarry"), {
        lease: 30,
        columns: { ...fullColumns, lockedUntil: "locked_until", processedAt: "processed_at" },
      }),
    );
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = await hold(claimer, 1);
    const at = new Date("2030-01-02T03:04:05.000Z");
    const result = await claimer.claimWithAcks(
      { rows: held, settlement: { kind: "markProcessed", at } },
      request(10),
    );
    expect(result.settled).toEqual([true]);
    expect(result.claimed.map(({ row }) => row.payload)).toEqual([1, 2]);
    const [acked] = (await db.rows(table)).filter((row) => row.id === held[0]?.id);
    expect(acked?.processed_at).toEqual(at);
    expect(acked?.locked_until).toBeNull();
    await claimer.close();
    await driver.close();
  });

  it("on a table with an isolation level, settles the acks and claims in one transaction", async () => {
    const table = await db.create(
      describeTable("lease", uniqueName("rc_lcarry"), { lease: 30, isolation: "repeatable read" }),
    );
    const driver = db.driver();
    await publishRows(driver, table, 3);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const held = await hold(claimer, 1);
    const result = await claimer.claimWithAcks({ rows: held, settlement: { kind: "delete" } }, request(10));
    expect(result.settled).toEqual([true]);
    expect(result.claimed.map(({ row }) => row.payload)).toEqual([1, 2]);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([1, 2]);
    await claimer.close();
    await driver.close();
  });
});

describe("a lease subscription whose worker acks row after row", () => {
  it("settles every row once and in order, its acks carried by the next claims", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_lcarry"), { lease: 30 }));
    const count = 40;
    const driver = db.driver();
    await publishRows(driver, table, count);
    const calls = new Map<string, number>();
    const broker = createBroker({ driver: countingDriver(driver, calls), logger: silentLogger });
    const handled: unknown[] = [];
    const subscription = await broker.subscribe(table, (delivery) => void handled.push(delivery.payload), {
      workers: 1,
      pollInterval: 20,
    });
    await expect.poll(() => subscription.stats.acked, { timeout: 20_000 }).toBe(count);
    await broker.close();
    expect(await db.rows(table)).toEqual([]);
    expect(handled).toEqual(Array.from({ length: count }, (_, n) => n));
    expect(subscription.stats.claimErrors).toBe(0);
    expect(calls.get("claimWithAcks") ?? 0).toBeGreaterThan(0);
  });
});
