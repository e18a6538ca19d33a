import {
  type Broker,
  createBroker,
  type Delivery,
  type SubscribeOptions,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { PostgresAdvisoryToken, PostgresDriver } from "../src/index.js";
import { deferred, describeTable, publishRows, TestDb, uniqueName, waitFor } from "./helpers.js";

const db = TestDb.forFile();

/** The sessions of one application_name, as pg_stat_activity shows them. */
async function sessions(app: string): Promise<{ pid: number; state: string; query: string }[]> {
  const rows = await db.query("SELECT pid, state, query FROM pg_stat_activity WHERE application_name = $1", [
    app,
  ]);
  return rows.map((row) => ({ pid: Number(row.pid), state: String(row.state), query: String(row.query) }));
}

/** How many connections the driver's own pool has checked out now. */
function checkedOut(driver: PostgresDriver): number {
  const pool = driver.pool as unknown as pg.Pool;
  return pool.totalCount - pool.idleCount;
}

async function advisoryLocksOf(app: string): Promise<number> {
  const [row] = await db.query(
    "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND a.application_name = $1",
    [app],
  );
  return Number(row?.n);
}

/**
 * Subscribes with a handler that records each delivery and keeps it in work until `release()`:
 * every delivery, or with `firstOnly` only the first.
 */
async function subscribeHolding(
  broker: Broker,
  table: TableDefinition,
  options: SubscribeOptions = {},
  firstOnly = false,
): Promise<{ seen: Delivery[]; release: () => void }> {
  const release = deferred();
  const seen: Delivery[] = [];
  await broker.subscribe(
    table,
    async (delivery) => {
      seen.push(delivery);
      if (!firstOnly || seen.length === 1) await release.promise;
    },
    options,
  );
  return { seen, release: () => release.resolve() };
}

describe("a row lock delivery in work", () => {
  it("keeps its backend idle in transaction, and its row invisible to other claims", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_inwork_rl")));
    const app = uniqueName("rc_app");
    const driver = db.driver({ applicationName: app });
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.publish(table, { n: 1 });
    const { seen, release } = await subscribeHolding(broker, table);
    await waitFor(() => seen.length === 1, { what: "the delivery" });
    const states = (await sessions(app)).map((session) => session.state);
    expect(states.filter((state) => state === "idle in transaction")).toHaveLength(1);
    // Another driver's claim passes over the locked row, and so does a plain SKIP LOCKED select.
    const other = db.driver();
    const claimer = await other.open(table, { group: null, logger: silentLogger });
    if (claimer.form !== "rowLock") throw new Error("expected a row lock claimer");
    expect(await claimer.claim({ limit: 10, now: new Date() })).toBeNull();
    const locked = await db.query(`SELECT id FROM "${table.name}" FOR UPDATE SKIP LOCKED`);
    expect(locked).toHaveLength(0);
    release();
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "the ack" });
    await Promise.all([broker.close(), claimer.close(), other.close()]);
    expect((await sessions(app)).filter((session) => session.state !== "idle")).toHaveLength(0);
  });
});

describe("pg_terminate_backend on a delivery's connection", () => {
  it.each(["rowLock", "advisory"] as const)(
    "returns the %s row and the broker goes on claiming",
    async (form) => {
      const table = await db.create(describeTable(form, uniqueName(`rc_term_${form}`)));
      const app = uniqueName("rc_app");
      const driver = db.driver({ applicationName: app });
      const broker = createBroker({ driver, logger: silentLogger });
      await publishRows(driver, table, 1);
      const { seen, release } = await subscribeHolding(broker, table, { pollInterval: 20 }, true);
      await waitFor(() => seen.length === 1, { what: "the first delivery" });
      const held = (await sessions(app)).filter((session) =>
        form === "rowLock" ? session.state === "idle in transaction" : /UPDATE/.test(session.query),
      );
      expect(held).toHaveLength(1);
      await db.query("SELECT pg_terminate_backend($1)", [held[0]?.pid]);
      release();
      await waitFor(() => seen.length === 2, { what: "the row to be delivered again" });
      // Row lock: the rollback undid nothing but the lock (no attempt spent); advisory: the take counted one.
      expect(seen[1]?.attempt).toBe(form === "rowLock" ? 1 : 2);
      await waitFor(async () => (await db.rows(table)).length === 0, { what: "the second delivery's ack" });
      await broker.close();
    },
  );
});

describe("an advisory delivery in work", () => {
  it("holds exactly one advisory lock, and none once settled", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_locks_adv")));
    const app = uniqueName("rc_app");
    const driver = db.driver({ applicationName: app });
    const broker = createBroker({ driver, logger: silentLogger });
    await publishRows(driver, table, 1);
    const { seen, release } = await subscribeHolding(broker, table);
    await waitFor(() => seen.length === 1, { what: "the delivery" });
    expect(await advisoryLocksOf(app)).toBe(1);
    release();
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "the ack" });
    await waitFor(async () => (await advisoryLocksOf(app)) === 0, { what: "the unlock" });
    await broker.close();
  });
});

describe("advisory keys belong to the database", () => {
  it("two tables whose keys match wait for each other", async () => {
    const prefix = uniqueName("rc_shared");
    const first = await db.create(
      describeTable("advisory", `${prefix}_a`, { advisoryLock: `${prefix}-{account}` }),
    );
    const second = await db.create(
      describeTable("advisory", `${prefix}_b`, { advisoryLock: `${prefix}-{account}` }),
    );
    const brokerA = createBroker({ driver: db.driver(), logger: silentLogger });
    const brokerB = createBroker({ driver: db.driver(), logger: silentLogger });
    await brokerA.publish(first, { n: "a" }, { values: { account: "7" } });
    await brokerB.publish(second, { n: "b1" }, { values: { account: "7" } });
    await brokerB.publish(second, { n: "b2" }, { values: { account: "8" } });
    const { seen: seenA, release } = await subscribeHolding(brokerA, first);
    const seenB: Delivery[] = [];
    await waitFor(() => seenA.length === 1, { what: "table A's delivery" });
    await brokerB.subscribe(
      second,
      (delivery) => {
        seenB.push(delivery);
      },
      { workers: 2, pollInterval: 20 },
    );
    // Table B's row under the other key runs; the one whose key table A holds waits.
    await waitFor(() => seenB.length === 1, { what: "table B's free key" });
    await waitFor(async () => (await db.rows(second)).length === 1, { what: "B to settle its free key" });
    // A claim on table B now passes over the row whose key table A holds.
    const probe = db.driver();
    const claimer = await probe.open(second, { group: null, logger: silentLogger });
    if (claimer.form !== "advisory") throw new Error("expected an advisory claimer");
    expect(await claimer.claim({ limit: 5, now: new Date() })).toEqual([]);
    await probe.close();
    expect(seenB.map((d) => d.payload)).toEqual([{ n: "b2" }]);
    release();
    await waitFor(() => seenB.length === 2, { what: "table B's held key after A settled" });
    expect(seenB[1]?.payload).toEqual({ n: "b1" });
    await Promise.all([brokerA.close(), brokerB.close()]);
  });
});

describe("connections held while handlers run", () => {
  it.each([
    ["rowLock", 3],
    ["lease", 0],
    ["advisory", 3],
  ] as const)("the %s form holds %i connections for three deliveries in work", async (form, expected) => {
    const table = await db.create(
      describeTable(form, uniqueName(`rc_conns_${form}`), form === "lease" ? { lease: 30 } : {}),
    );
    const app = uniqueName("rc_app");
    const driver = db.driver({ applicationName: app, max: 10 });
    const broker = createBroker({ driver, logger: silentLogger });
    await publishRows(driver, table, 5);
    const { seen, release } = await subscribeHolding(broker, table, { workers: 3 });
    await waitFor(() => seen.length === 3, { what: "three deliveries in work" });
    expect(checkedOut(driver)).toBe(expected);
    const busy = (await sessions(app)).filter((session) => session.state === "idle in transaction");
    expect(busy).toHaveLength(form === "rowLock" ? 3 : 0);
    if (form === "advisory") expect(await advisoryLocksOf(app)).toBe(3);
    release();
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "every ack" });
    await broker.close();
    await waitFor(async () => (await sessions(app)).length === 0, { what: "every connection to close" });
  });
});

describe("the FIFO group guard", () => {
  it.each(["rowLock", "lease"] as const)(
    "while the head of a %s group is in work, another driver's claim on the group takes nothing",
    async (form) => {
      const table = await db.create(
        describeTable(form, uniqueName(`rc_fifo_${form}`), {
          fifo: true,
          ...(form === "lease" ? { lease: 30 } : {}),
        }),
      );
      const app = uniqueName("rc_app");
      const broker = createBroker({ driver: db.driver({ applicationName: app }), logger: silentLogger });
      await broker.publishMany(
        table,
        [0, 1, 2].map((payload) => ({ payload, group: "g" })),
      );
      await broker.publish(table, 99, { group: "other" });
      const { seen, release } = await subscribeHolding(
        broker,
        table,
        { group: "g", workers: 3, pollInterval: 20 },
        true,
      );
      await waitFor(() => seen.length === 1, { what: "the head in work" });
      // Row lock: the claim's transaction holds the group's lock while the handler runs. (Lease: "in
      // work" is the lease in the row; the lock lives only for each claim's statement.)
      if (form === "rowLock") expect(await advisoryLocksOf(app)).toBe(1);
      const probe = db.driver();
      const claimer = await probe.open(table, { group: "g", logger: silentLogger });
      const now = new Date();
      const claimed =
        claimer.form === "rowLock"
          ? await claimer.claim({ limit: 5, now })
          : claimer.form === "lease"
            ? await claimer.claim({
                limit: 5,
                now,
                expiry: new Date(Math.ceil(now.getTime() / 1000) * 1000 + 30_000),
              })
            : null;
      expect(claimed === null || (Array.isArray(claimed) && claimed.length === 0)).toBe(true);
      // Another group is not held up.
      const otherClaimer = await probe.open(table, { group: "other", logger: silentLogger });
      if (otherClaimer.form === "rowLock") {
        const batch = await otherClaimer.claim({ limit: 5, now });
        expect(batch?.rows.map((row) => row.payload)).toEqual([99]);
        if (batch !== null) await otherClaimer.release(batch.token);
      } else if (otherClaimer.form === "lease") {
        const rows = await otherClaimer.claim({
          limit: 5,
          now,
          expiry: new Date(Math.ceil(now.getTime() / 1000) * 1000 + 1000),
        });
        expect(rows.map((claim) => claim.row.payload)).toEqual([99]);
      }
      release();
      await waitFor(() => seen.length === 3, { what: "the rest of the group" });
      expect(seen.map((delivery) => delivery.payload)).toEqual([0, 1, 2]);
      await Promise.all([broker.close(), probe.close()]);
    },
  );
});

describe("an advisory unlock the server does not confirm", () => {
  it("closes the delivery's connection instead of returning it to the pool", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_unlock")));
    const app = uniqueName("rc_app");
    const driver = db.driver({ applicationName: app });
    await publishRows(driver, table, 1);
    const claimer = await driver.open(table, { group: null, logger: silentLogger });
    if (claimer.form !== "advisory") throw new Error("expected an advisory claimer");
    const [claimed] = await claimer.claim({ limit: 1, now: new Date() });
    if (claimed === undefined) throw new Error("expected a claimed row");
    const token = claimed.token as PostgresAdvisoryToken;
    const pid = (await token.connection.query({ text: "SELECT pg_backend_pid() AS pid" })).rows[0]?.pid;
    // Something else released the key on the delivery's session: the settlement's unlock finds nothing to unlock.
    await token.connection.query({ text: "SELECT pg_advisory_unlock_all()" });
    expect((await sessions(app)).some((session) => session.pid === pid)).toBe(true);
    await claimer.settle(token, claimed.row, { kind: "delete" });
    expect(await db.rows(table)).toHaveLength(0);
    await waitFor(async () => !(await sessions(app)).some((session) => session.pid === pid), {
      what: "the session to be closed",
    });
    await claimer.close();
    await driver.close();
  });
});
