/**
 * Acks sent with the next claim (`claimWithAcks`), tested on the claimer directly and through a
 * broker, in the lease and advisory lock forms: the acks (fenced by their tokens, or by their
 * keys) and the claim in one transaction, a failure changing nothing, and a worker draining a
 * queue this way settling every row once, in order. Which call carried an ack is core's to
 * decide, and tested there without a database (`packages/core/test/ack-carrier.test.ts`).
 */
import { BrokerError, createBroker, defineTable, silentLogger, type TableDefinition } from "@rowclaim/core";
import type {
  AdvisoryClaimer,
  ClaimedWithAcks,
  ClaimRequest,
  HeldKeyRow,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  LeaseToken,
} from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import type { HeldKey } from "../src/keys.js";
import { claimColumns, leaseTable, publishRow, uniqueName, useSqliteFile } from "./support.js";

const sqlite = useSqliteFile();
const { driver, rows, leaseClaimer, advisoryClaimer } = sqlite;

function table(): TableDefinition {
  const defined = defineTable(leaseTable(uniqueName("settle_claim")));
  sqlite.db.exec(driver().schemaSql(defined));
  return defined;
}

/** Publishes one row per entry of `accounts` (its `account` value; `undefined`: the table has no such column). */
async function publish(t: TableDefinition, accounts: readonly (string | undefined)[]): Promise<void> {
  await driver().publish(
    t,
    accounts.map((account, n) =>
      publishRow(JSON.stringify({ n }), account === undefined ? {} : { values: { account } }),
    ),
    {},
  );
}

/** `count` rows of a table without an account column. */
function unkeyed(count: number): undefined[] {
  return Array.from({ length: count }, () => undefined);
}

/** Claims `limit` rows with `claimer`, leased until `expiryMs`. */
async function claim(
  claimer: LeaseClaimer,
  limit: number,
  expiryMs = Date.now() + 60_000,
): Promise<{ id: string | number | bigint; token: LeaseToken }[]> {
  const claimed = await claimer.claim({ limit, now: new Date(), expiry: new Date(expiryMs) });
  return claimed.map(({ row, token }) => ({ id: row.id, token }));
}

/** Calls the lease claimer's `claimWithAcks` with `held` deleted; fails the test when the claimer has none. */
function leaseClaimWithAcks(
  claimer: LeaseClaimer,
  held: readonly HeldLease[],
  request: LeaseClaimRequest,
): Promise<ClaimedWithAcks<LeaseToken>> {
  if (claimer.claimWithAcks === undefined) throw new Error("the SQLite lease claimer has no claimWithAcks");
  return claimer.claimWithAcks({ rows: held, settlement: { kind: "delete" } }, request);
}

/** Calls the advisory claimer's `claimWithAcks` with `acks` deleted; fails the test when the claimer has none. */
function advisoryClaimWithAcks(
  claimer: AdvisoryClaimer<HeldKey>,
  acks: readonly HeldKeyRow<HeldKey>[],
  request: ClaimRequest,
): Promise<ClaimedWithAcks<HeldKey>> {
  if (claimer.claimWithAcks === undefined)
    throw new Error("the SQLite advisory claimer has no claimWithAcks");
  return claimer.claimWithAcks({ rows: acks, settlement: { kind: "delete" } }, request);
}

describe("claimWithAcks: the acks and the next claim in one transaction (lease form)", () => {
  it("deletes the acked rows and claims the next ones in claim order, leased with the new expiry", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    await publish(t, unkeyed(5));
    const held = await claim(claimer, 2);
    const expiry = new Date(Math.floor(Date.now() / 1000) * 1000 + 90_000);
    const result = await leaseClaimWithAcks(claimer, held, { limit: 2, now: new Date(), expiry });
    expect(result.settled).toEqual([true, true]);
    expect(result.claimed.map(({ row }) => Number(row.id))).toEqual([3, 4]);
    expect(result.claimed.map(({ token }) => token.expiry.getTime())).toEqual([
      expiry.getTime(),
      expiry.getTime(),
    ]);
    expect(rows(t).map((row) => [Number(row.id), row.locked_until])).toEqual([
      [3, expiry.getTime()],
      [4, expiry.getTime()],
      [5, null],
    ]);
  });

  it("never claims a row it settles, and claims nothing from an empty queue", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    await publish(t, unkeyed(1));
    // Leased until the past: the row would be claimable again, were it not settled first.
    const held = await claim(claimer, 1, Date.now() - 5_000);
    const result = await leaseClaimWithAcks(claimer, held, {
      limit: 1,
      now: new Date(),
      expiry: new Date(Date.now() + 60_000),
    });
    expect(result).toEqual({ settled: [true], claimed: [] });
    expect(rows(t)).toEqual([]);
  });

  it("a row whose lease was taken over reads false and is unchanged; the other acks settle and the claim goes on", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    await publish(t, unkeyed(4));
    const held = await claim(claimer, 2);
    sqlite.db.prepare(`UPDATE "${t.name}" SET locked_until = 1 WHERE id = ?`).run(held[1]?.id);
    const result = await leaseClaimWithAcks(claimer, held, {
      limit: 1,
      now: new Date(),
      expiry: new Date(Date.now() + 60_000),
    });
    expect(result.settled).toEqual([true, false]);
    // The taken-over row (its lease ran out) is due again and first in claim order: the claim takes it.
    expect(result.claimed.map(({ row }) => Number(row.id))).toEqual([Number(held[1]?.id)]);
    expect(rows(t).map((row) => Number(row.id))).toEqual([2, 3, 4]);
  });

  it("a failing claim rolls the acks back too: it throws, no row changed, and no transaction stays open", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    await publish(t, unkeyed(3));
    const held = await claim(claimer, 1);
    const before = rows(t);
    // The claim's UPDATE fails after the ack's DELETE ran in the same transaction.
    sqlite.db.exec(
      `CREATE TRIGGER "${t.name}_refuse" BEFORE UPDATE OF locked_until ON "${t.name}" BEGIN SELECT RAISE(ABORT, 'refused'); END`,
    );
    const failure = await leaseClaimWithAcks(claimer, held, {
      limit: 1,
      now: new Date(),
      expiry: new Date(Date.now() + 60_000),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(BrokerError.is(failure, "CONSTRAINT")).toBe(true);
    expect(rows(t)).toEqual(before);
    expect(sqlite.db.inTransaction).toBe(false);
  });
});

describe("a worker's ack travels with its next claim (broker, lease form)", () => {
  it("one worker draining a queue with its acks sent inside its claims settles each row once, in order", async () => {
    const t = table();
    const count = 40;
    await publish(t, unkeyed(count));
    const broker = createBroker({ driver: driver(), logger: silentLogger });
    const handled: number[] = [];
    const subscription = await broker.subscribe(t, (delivery) => void handled.push(Number(delivery.id)), {
      workers: 1,
      pollInterval: 20,
    });
    await expect.poll(() => subscription.stats.acked, { timeout: 10_000 }).toBe(count);
    await subscription.stop();
    expect(rows(t)).toEqual([]);
    expect(handled).toEqual(Array.from({ length: count }, (_, n) => n + 1));
    expect(subscription.stats.settleErrors).toBe(0);
    await broker.close();
  });
});

function advisoryTable(): TableDefinition {
  const name = uniqueName("settle_claim_adv");
  const defined = defineTable({
    name,
    columns: { ...claimColumns },
    extraColumns: ["account"],
    advisoryLock: `${name}-{account}`,
  });
  sqlite.db.exec(driver().schemaSql(defined));
  return defined;
}

describe("claimWithAcks: the acks and the next claim in one transaction (advisory lock form)", () => {
  it("deletes the acked row, frees its key, and takes the key's next row in the same call", async () => {
    const t = advisoryTable();
    const claimer = await advisoryClaimer(t);
    await publish(t, ["a", "a", "b"]);
    const [first] = await claimer.claim({ limit: 1, now: new Date() });
    if (first === undefined) throw new Error("claimed nothing");
    // The attempt a claim leaves in the row (counted by the take).
    const claimedAttempt = rows(t)[0]?.attempt;
    const result = await advisoryClaimWithAcks(claimer, [first], { limit: 2, now: new Date() });
    expect(result.settled).toEqual([true]);
    expect(result.claimed.map(({ row }) => Number(row.id))).toEqual([2, 3]);
    expect(first.token.held).toBe(false);
    expect(result.claimed.every(({ token }) => token.held)).toBe(true);
    expect(rows(t).map((row) => [Number(row.id), row.attempt])).toEqual([
      [2, claimedAttempt],
      [3, claimedAttempt],
    ]);
    // The key of row 2 ("a") is held again: a claim of this process passes over row 4 of "a".
    await publish(t, ["a"]);
    expect(await claimer.claim({ limit: 1, now: new Date() })).toEqual([]);
    await claimer.close();
  });

  it("a row gone while its key was held reads false; the claim goes on", async () => {
    const t = advisoryTable();
    const claimer = await advisoryClaimer(t);
    await publish(t, ["a", "b"]);
    const [first] = await claimer.claim({ limit: 1, now: new Date() });
    if (first === undefined) throw new Error("claimed nothing");
    sqlite.db.prepare(`DELETE FROM "${t.name}" WHERE id = ?`).run(first.row.id);
    const result = await advisoryClaimWithAcks(claimer, [first], { limit: 1, now: new Date() });
    expect(result.settled).toEqual([false]);
    expect(result.claimed.map(({ row }) => Number(row.id))).toEqual([2]);
    await claimer.close();
  });

  it("a failing claim rolls the acks back too: it throws, no row changed, and every ack's key stays held", async () => {
    const t = advisoryTable();
    const claimer = await advisoryClaimer(t);
    await publish(t, ["a", "b"]);
    const [first] = await claimer.claim({ limit: 1, now: new Date() });
    if (first === undefined) throw new Error("claimed nothing");
    const before = rows(t);
    // The take (an UPDATE counting the attempt) fails after the ack's DELETE ran in the same transaction.
    sqlite.db.exec(
      `CREATE TRIGGER "${t.name}_refuse" BEFORE UPDATE OF attempt ON "${t.name}" BEGIN SELECT RAISE(ABORT, 'refused'); END`,
    );
    const failure = await advisoryClaimWithAcks(claimer, [first], { limit: 1, now: new Date() }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(BrokerError.is(failure, "CONSTRAINT")).toBe(true);
    expect(rows(t)).toEqual(before);
    expect(sqlite.db.inTransaction).toBe(false);
    expect(first.token.held).toBe(true);
    await claimer.close();
  });
});

describe("advisory claims that run at once never take one row twice", () => {
  it("two claims started together take different rows: each holds its key before the other reads", async () => {
    const t = advisoryTable();
    const claimer = await advisoryClaimer(t);
    await publish(t, ["a", "b"]);
    const [first, second] = await Promise.all([
      claimer.claim({ limit: 1, now: new Date() }),
      claimer.claim({ limit: 1, now: new Date() }),
    ]);
    expect([...(first ?? []), ...(second ?? [])].map(({ row }) => Number(row.id)).sort()).toEqual([1, 2]);
    await claimer.close();
  });

  it("a claim started beside an ack sent with a claim does not take the rows that claim took", async () => {
    const t = advisoryTable();
    const claimer = await advisoryClaimer(t);
    await publish(t, ["a", "b", "c"]);
    const [held] = await claimer.claim({ limit: 1, now: new Date() });
    if (held === undefined) throw new Error("claimed nothing");
    const [carried, beside] = await Promise.all([
      advisoryClaimWithAcks(claimer, [held], { limit: 1, now: new Date() }),
      claimer.claim({ limit: 1, now: new Date() }),
    ]);
    expect([...carried.claimed, ...beside].map(({ row }) => Number(row.id)).sort()).toEqual([2, 3]);
    await claimer.close();
  });
});

describe("a worker's ack travels with its next claim (broker, advisory lock form)", () => {
  it("one worker draining one key's rows takes each next row with the ack, without waiting for a poll", async () => {
    const t = advisoryTable();
    const count = 30;
    await publish(
      t,
      Array.from({ length: count }, () => "a"),
    );
    const broker = createBroker({ driver: driver(), logger: silentLogger });
    const handled: number[] = [];
    // A poll a minute apart: a claim that passed over the key just acked would leave the worker
    // idle until the poll, and the drain below would not finish.
    const subscription = await broker.subscribe(t, (delivery) => void handled.push(Number(delivery.id)), {
      workers: 1,
      pollInterval: 60_000,
    });
    await expect.poll(() => subscription.stats.acked, { timeout: 10_000 }).toBe(count);
    expect(rows(t)).toEqual([]);
    expect(handled).toEqual(Array.from({ length: count }, (_, n) => n + 1));
    expect(subscription.stats.settleErrors).toBe(0);
    await broker.close();
  });
});
