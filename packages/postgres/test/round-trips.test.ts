/**
 * Round trips per job: on the driver's own (pipelined) pool a row lock claim sends BEGIN and its
 * SELECT together, without waiting for BEGIN's answer, and a batch's end sends its acks, COMMIT
 * and the next claim together; an advisory claim in a process alone on
 * its keys never reads the lock table, and a one-row advisory claim holds one session from its
 * candidates read to its settlement.
 */
import { BrokerError, createBroker, silentLogger, type TableDefinition } from "@rowclaim/core";
import { type AdvisoryClaimer, type BatchEnd, type ClaimedRow, leaseExpiry } from "@rowclaim/core/driver";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { type PostgresDriver, quoteIdent } from "../src/index.js";
import type { PostgresLeaseClaimer } from "../src/lease.js";
import type { PostgresRowLockClaimer, PostgresRowLockToken } from "../src/row-lock.js";
import { claimBatch, describeTable, openClaimer, TestDb, uniqueName } from "./helpers.js";

const db = TestDb.forFile();

/** A socket's own write methods, which its `Writable` calls once per write it makes. */
interface SocketWrites {
  _write: (...args: unknown[]) => void;
  _writev: (...args: unknown[]) => void;
}

/**
 * Records, in order, when each statement is sent and when its answer comes, on every client of
 * `pool`, and each write the client's socket makes to the server (`write`).
 */
function recordStatements(pool: pg.Pool, events: string[]): void {
  pool.on("connect", (client) => {
    const socket = (client as unknown as { connection: { stream: SocketWrites } }).connection.stream;
    for (const method of ["_write", "_writev"] as const) {
      const write = socket[method].bind(socket);
      socket[method] = (...args: unknown[]) => {
        events.push("write");
        write(...args);
      };
    }
    const query = client.query.bind(client) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
    (client as { query: unknown }).query = (config: pg.QueryConfig) => {
      const label = config.text.split(" ")[0] ?? "";
      events.push(`sent ${label}`);
      return query(config).finally(() => events.push(`done ${label}`));
    };
  });
}

/**
 * A row lock table holding one row per payload, a driver of its own (its statements recorded in
 * `events`, when given) and a claimer on it.
 */
async function rowLockSetup(
  payloads: readonly number[],
  events?: string[],
): Promise<{ table: TableDefinition; driver: PostgresDriver; claimer: PostgresRowLockClaimer }> {
  const table = await db.create(describeTable("rowLock", uniqueName("rc_trips")));
  const driver = db.driver();
  if (events !== undefined) recordStatements(driver.pool as pg.Pool, events);
  await createBroker({ driver, logger: silentLogger }).publishMany(
    table,
    payloads.map((payload) => ({ payload })),
  );
  return { table, driver, claimer: await openClaimer<PostgresRowLockClaimer>(driver, table) };
}

/**
 * References the row of `table` with the `which` id from a new table, so that deleting that row
 * breaks a foreign key; resolves the function that drops the new table.
 */
async function referenceRow(table: TableDefinition, which: "min" | "max"): Promise<() => Promise<void>> {
  const guard = uniqueName("rc_trips_ref");
  await db.query(
    `CREATE TABLE ${quoteIdent(guard)} (ref bigint REFERENCES ${quoteIdent(table.name)} (id) ON DELETE RESTRICT)`,
  );
  await db.query(`INSERT INTO ${quoteIdent(guard)} SELECT ${which}(id) FROM ${quoteIdent(table.name)}`);
  return async () => {
    await db.query(`DROP TABLE IF EXISTS ${quoteIdent(guard)}`);
  };
}

/** Ends `batch` with its rows deleted, carrying a claim of up to `limit` rows (`endBatchWithClaim`). */
function deleteAndClaim(
  claimer: PostgresRowLockClaimer,
  batch: { readonly token: PostgresRowLockToken; readonly rows: readonly ClaimedRow[] },
  limit: number,
): Promise<BatchEnd<PostgresRowLockToken>> {
  return claimer.endBatchWithClaim(
    batch.token,
    { rows: batch.rows, settlement: { kind: "delete" } },
    { limit, now: new Date() },
  );
}

describe("a row lock claim on the driver's own pool", () => {
  it("sends BEGIN and the claim's SELECT together, in one write: one round trip", async () => {
    const events: string[] = [];
    const { table, driver, claimer } = await rowLockSetup([1], events);
    events.length = 0;
    const batch = await claimBatch(claimer, 1);
    expect(events).toEqual(["sent BEGIN", "sent SELECT", "write", "done BEGIN", "done SELECT"]);
    const [row] = batch.rows;
    if (row === undefined) throw new Error("no row in the batch");
    await claimer.settle(batch.token, row, { kind: "delete" });
    await claimer.endBatch(batch.token);
    expect(await db.rows(table)).toHaveLength(0);
    await claimer.close();
    await driver.close();
  });
});

describe("a lease claim carrying acks on the driver's own pool", () => {
  it("sends the acks and the claim as one statement, in one write: one round trip", async () => {
    const events: string[] = [];
    const table = await db.create(describeTable("lease", uniqueName("rc_trips"), { lease: 30 }));
    const driver = db.driver();
    recordStatements(driver.pool as pg.Pool, events);
    await createBroker({ driver, logger: silentLogger }).publishMany(table, [{ payload: 1 }, { payload: 2 }]);
    const claimer = await openClaimer<PostgresLeaseClaimer>(driver, table);
    const now = new Date();
    const [first] = await claimer.claim({ limit: 1, now, expiry: leaseExpiry(now, 30) });
    if (first === undefined) throw new Error("no row claimed");
    events.length = 0;
    const next = new Date();
    const result = await claimer.claimWithAcks(
      { rows: [{ id: first.row.id, token: first.token }], settlement: { kind: "delete" } },
      { limit: 1, now: next, expiry: leaseExpiry(next, 30) },
    );
    expect(events).toEqual(["sent WITH", "write", "done WITH"]);
    expect(result.settled).toEqual([true]);
    expect(result.claimed.map(({ row }) => row.payload)).toEqual([2]);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([2]);
    await claimer.close();
    await driver.close();
  });
});

describe("a row lock batch's acks and its commit", () => {
  it("go together, in one write, one round trip, and commit", async () => {
    const events: string[] = [];
    const { table, driver, claimer } = await rowLockSetup([1, 2, 3], events);
    const batch = await claimBatch(claimer, 2);
    events.length = 0;
    await claimer.endBatch(batch.token, { rows: batch.rows, settlement: { kind: "delete" } });
    expect(events).toEqual(["sent DELETE", "sent COMMIT", "write", "done DELETE", "done COMMIT"]);
    expect(batch.token.connection.released).toBe(true);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([3]);
    await claimer.close();
    await driver.close();
  });

  it("refuse an ack the table cannot take (markProcessed, no processedAt column) with INVALID_ARGUMENT, rolled back and the connection returned", async () => {
    const { table, driver, claimer } = await rowLockSetup([1, 2]);
    const batch = await claimBatch(claimer, 2);
    const code = await claimer
      .endBatch(batch.token, { rows: batch.rows, settlement: { kind: "markProcessed", at: new Date() } })
      .then(
        () => "resolved",
        (error: unknown) => (BrokerError.is(error) ? error.code : `raw ${String(error)}`),
      );
    expect(code).toBe("INVALID_ARGUMENT");
    expect(batch.token.connection.released).toBe(true);
    // Nothing holds the rows: a claim takes both again.
    const again = await claimBatch(claimer, 2);
    expect(again.rows.map((row) => row.payload)).toEqual([1, 2]);
    await claimer.release(again.token);
    expect(await db.rows(table)).toHaveLength(2);
    await claimer.close();
    await driver.close();
  });

  it("commit nothing when the ack statement fails, which rejects with its code", async () => {
    const { table, driver, claimer } = await rowLockSetup([1, 2]);
    // The second row is referenced from another table (before the claim locks it): deleting it
    // breaks the foreign key.
    const dropReference = await referenceRow(table, "max");
    try {
      const batch = await claimBatch(claimer, 2);
      const code = await claimer
        .endBatch(batch.token, { rows: batch.rows, settlement: { kind: "delete" } })
        .then(
          () => "resolved",
          (error: unknown) => (BrokerError.is(error) ? error.code : `raw ${String(error)}`),
        );
      expect(code).toBe("CONSTRAINT");
      expect(batch.token.connection.released).toBe(true);
      await claimer.release(batch.token);
      expect((await db.rows(table)).map((row) => row.payload)).toEqual([1, 2]);
      // The connection went back clean: the next claim takes both rows again.
      const again = await claimer.claim({ limit: 2, now: new Date() });
      expect(again?.rows).toHaveLength(2);
      if (again !== null) await claimer.release(again.token);
    } finally {
      await dropReference();
    }
    await claimer.close();
    await driver.close();
  });
});

describe("a row lock batch's end carrying the next claim", () => {
  it("sends the acks, COMMIT, BEGIN and the claim in one write; the acked rows are gone and the next rows locked on the same session", async () => {
    const events: string[] = [];
    const { table, driver, claimer } = await rowLockSetup([1, 2, 3], events);
    const batch = await claimBatch(claimer, 1);
    events.length = 0;
    const result = await deleteAndClaim(claimer, batch, 1);
    expect(events).toEqual([
      "sent DELETE",
      "sent COMMIT",
      "sent BEGIN",
      "sent SELECT",
      "write",
      "done DELETE",
      "done COMMIT",
      "done BEGIN",
      "done SELECT",
    ]);
    expect(result.ended).toBeUndefined();
    const next = result.claimed;
    if (next === null || "error" in next) throw new Error(`no next batch: ${String(next?.error)}`);
    expect(next.rows.map((row) => row.payload)).toEqual([2]);
    // The ended batch's holder let the session go; the next batch's holds it, its row locked.
    expect(batch.token.connection.released).toBe(true);
    expect(next.token.connection.released).toBe(false);
    expect(next.token.connection.client).toBe(batch.token.connection.client);
    const free = await db.query(
      `SELECT payload FROM ${quoteIdent(table.name)} ORDER BY id FOR UPDATE SKIP LOCKED`,
    );
    expect(free.map((row) => row.payload)).toEqual([3]);
    // Anything done through the ended batch's token no longer touches the session.
    await claimer.release(batch.token);
    await claimer.settle(next.token, next.rows[0] as ClaimedRow, { kind: "delete" });
    await claimer.endBatch(next.token);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([3]);
    await claimer.close();
    await driver.close();
  });

  it("reports a failed ack apart: nothing of the batch committed, and the claim after it still runs", async () => {
    const { table, driver, claimer } = await rowLockSetup([1, 2]);
    const dropReference = await referenceRow(table, "min");
    try {
      const batch = await claimBatch(claimer, 1);
      const result = await deleteAndClaim(claimer, batch, 2);
      expect(BrokerError.is(result.ended?.error) ? result.ended.error.code : result.ended).toBe("CONSTRAINT");
      const next = result.claimed;
      if (next === null || "error" in next) throw new Error(`no next batch: ${String(next?.error)}`);
      // The failed batch rolled back before the claim began: its row is due again and taken.
      expect(next.rows.map((row) => row.payload)).toEqual([1, 2]);
      await claimer.release(next.token);
      expect((await db.rows(table)).map((row) => row.payload)).toEqual([1, 2]);
    } finally {
      await dropReference();
    }
    await claimer.close();
    await driver.close();
  });

  it("reports an ack the table cannot take (markProcessed, no processedAt column) as the batch's end, rolled back, and still claims", async () => {
    const { table, driver, claimer } = await rowLockSetup([1, 2]);
    const batch = await claimBatch(claimer, 1);
    const result = await claimer.endBatchWithClaim(
      batch.token,
      { rows: batch.rows, settlement: { kind: "markProcessed", at: new Date() } },
      { limit: 2, now: new Date() },
    );
    expect(BrokerError.is(result.ended?.error) ? result.ended.error.code : result.ended).toBe(
      "INVALID_ARGUMENT",
    );
    expect(batch.token.connection.released).toBe(true);
    const next = result.claimed;
    if (next === null || "error" in next) throw new Error(`no next batch: ${String(next?.error)}`);
    await claimer.release(next.token);
    // The batch rolled back before the claim: its row is due again and taken with the other.
    expect(next.rows.map((row) => row.payload)).toEqual([1, 2]);
    expect(await db.rows(table)).toHaveLength(2);
    await claimer.close();
    await driver.close();
  });

  it("ends the claim's transaction and gives the connection back when no row is due", async () => {
    const { table, driver, claimer } = await rowLockSetup([1]);
    const batch = await claimBatch(claimer, 1);
    const pool = driver.pool as pg.Pool;
    const result = await deleteAndClaim(claimer, batch, 1);
    expect(result).toEqual({ ended: undefined, claimed: null });
    expect(pool.totalCount - pool.idleCount).toBe(0);
    expect(await db.rows(table)).toHaveLength(0);
    await claimer.close();
    await driver.close();
  });
});

describe("an advisory claim", () => {
  it("reads no lock table while no other session holds the keys it meets, and passes over its own keys", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_trips")));
    const driver = db.driver();
    const texts: string[] = [];
    (driver.pool as pg.Pool).on("connect", (client) => {
      const query = client.query.bind(client) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
      (client as { query: unknown }).query = (config: pg.QueryConfig) => {
        texts.push(config.text);
        return query(config);
      };
    });
    await createBroker({ driver, logger: silentLogger }).publishMany(
      table,
      [0, 1, 2, 3].map((n) => ({ payload: n, values: { account: n < 2 ? "a" : `b${n}` } })),
    );
    const claimer = await openClaimer<AdvisoryClaimer>(driver, table);
    texts.length = 0;
    const first = await claimer.claim({ limit: 1, now: new Date() });
    const second = await claimer.claim({ limit: 1, now: new Date() });
    // The second claim passes over key "a", which the first one holds, without trying it.
    expect([...first, ...second].map((claimed) => claimed.row.payload)).toEqual([0, 2]);
    expect(texts.filter((text) => text.includes("pg_locks"))).toEqual([]);
    expect(texts.filter((text) => text.includes("pg_try_advisory_lock"))).toHaveLength(2);
    for (const { token, row } of [...first, ...second]) await claimer.settle(token, row, { kind: "delete" });
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([1, 3]);
    await claimer.close();
    await driver.close();
  });

  it("checks out one connection for a one-row claim: its candidates read, the take and the settlement run on that session", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_trips")));
    const driver = db.driver();
    const pool = driver.pool as pg.Pool;
    const statements: { client: unknown; text: string }[] = [];
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
      (client as { query: unknown }).query = (config: pg.QueryConfig) => {
        statements.push({ client, text: config.text });
        return query(config);
      };
    });
    let checkouts = 0;
    pool.on("acquire", () => {
      checkouts += 1;
    });
    await createBroker({ driver, logger: silentLogger }).publishMany(
      table,
      [0, 1].map((n) => ({ payload: n, values: { account: `k${n}` } })),
    );
    const claimer = await openClaimer<AdvisoryClaimer>(driver, table);
    statements.length = 0;
    checkouts = 0;
    const [claimed] = await claimer.claim({ limit: 1, now: new Date() });
    expect(claimed?.row.payload).toBe(0);
    expect(checkouts).toBe(1);
    if (claimed !== undefined) await claimer.settle(claimed.token, claimed.row, { kind: "delete" });
    // The candidates read, the lock and take, the settlement with the unlock: three statements on one session.
    expect(statements).toHaveLength(3);
    expect(new Set(statements.map((statement) => statement.client)).size).toBe(1);
    expect(checkouts).toBe(1);
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([1]);
    await claimer.close();
    await driver.close();
  });

  it("reads the lock table when a key another session holds stands in its way, and still takes the rows behind it", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_trips")));
    const driver = db.driver();
    const other = db.driver();
    await createBroker({ driver, logger: silentLogger }).publishMany(
      table,
      [0, 1, 2].map((n) => ({ payload: n, values: { account: n < 2 ? "busy" : "free" } })),
    );
    const mine = await openClaimer<AdvisoryClaimer>(driver, table);
    const theirs = await openClaimer<AdvisoryClaimer>(other, table);
    const [held] = await theirs.claim({ limit: 1, now: new Date() });
    expect(held?.row.payload).toBe(0);
    const taken = await mine.claim({ limit: 1, now: new Date() });
    expect(taken.map((claimed) => claimed.row.payload)).toEqual([2]);
    for (const { token, row } of taken) await mine.settle(token, row, { kind: "delete" });
    if (held !== undefined) await theirs.settle(held.token, held.row, { kind: "delete" });
    expect((await db.rows(table)).map((row) => row.payload)).toEqual([1]);
    await mine.close();
    await theirs.close();
    await driver.close();
    await other.close();
  });
});
