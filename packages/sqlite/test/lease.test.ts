import {
  ack,
  type Broker,
  BrokerError,
  createBroker,
  type Delivery,
  defineTable,
  LeaseLostError,
  retry,
  retryAfter,
  silentLogger,
  type TableDefinition,
  type TableDescription,
} from "@rowclaim/core";
import { leaseExpiry } from "@rowclaim/core/driver";
import { afterEach, describe, expect, it } from "vitest";
import { createSqliteDriver, type SqliteDriver } from "../src/index.js";
import { leaseTable, openConnection, publishRow, uniqueName, useSqliteFile, waitFor } from "./support.js";

const sqlite = useSqliteFile();
const { rows } = sqlite;
const brokers: Broker[] = [];

afterEach(async () => {
  await Promise.all(brokers.splice(0).map((broker) => broker.close({ timeout: 2000 })));
});

function driver(): SqliteDriver {
  return createSqliteDriver({ filename: sqlite.file });
}

function broker(): Broker {
  const made = createBroker({ driver: driver(), logger: silentLogger });
  brokers.push(made);
  return made;
}

function table(extra: Partial<TableDescription> = {}, prefix = "lease"): TableDefinition {
  const defined = defineTable(leaseTable(uniqueName(prefix), extra));
  sqlite.db.exec(driver().schemaSql(defined));
  return defined;
}

describe("lease claims", () => {
  it("delivers published rows once each, reads attempt 1 first, and ack deletes them", async () => {
    const t = table();
    const b = broker();
    const seen: Delivery[] = [];
    await b.subscribe(t, (delivery) => {
      seen.push(delivery);
      return ack();
    });
    await b.publishMany(t, [{ payload: { n: 1 } }, { payload: { n: 2 } }, { payload: { n: 3 } }]);
    await waitFor(() => seen.length === 3 && rows(t).length === 0);
    expect(seen.map((d) => d.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(seen.every((d) => d.attempt === 1 && d.form === "lease")).toBe(true);
  });

  it("a batch claim returns its rows in claim order: priority, then runAt, then id", async () => {
    const t = table();
    const d = driver();
    const now = Date.now();
    await d.publish(
      t,
      [
        publishRow('"c"', { runAt: new Date(now - 1000), priority: 5 }),
        publishRow('"a"', { runAt: new Date(now - 1000), priority: 1 }),
        publishRow('"b"', { runAt: new Date(now - 2000), priority: 5 }),
        publishRow('"d"', { priority: 5 }),
        publishRow('"e"', { runAt: new Date(now - 1000), priority: 5 }),
      ],
      {},
    );
    const claimer = await d.open(t, { group: null, logger: silentLogger });
    if (claimer.form !== "lease") throw new Error("expected a lease claimer");
    const claimed = await claimer.claim({
      limit: 10,
      now: new Date(now),
      expiry: leaseExpiry(new Date(now), 30),
    });
    expect(claimed.map((c) => c.row.payload)).toEqual(["a", "d", "b", "c", "e"]);
    expect(claimed.every((c) => c.row.attempt === 1)).toBe(true);
    expect(
      rows(t).every((row) => row.attempt === 2 && row.locked_until === claimed[0]?.token.expiry.getTime()),
    ).toBe(true);
    await d.close();
  });

  it("stores times as INTEGER epoch milliseconds and the expiry as a whole second", async () => {
    const t = table();
    const d = driver();
    const runAt = new Date("2020-01-02T03:04:05.678Z");
    await d.publish(t, [publishRow("1", { runAt })], {});
    const claimer = await d.open(t, { group: null, logger: silentLogger });
    if (claimer.form !== "lease") throw new Error("expected a lease claimer");
    const now = new Date();
    const [claimed] = await claimer.claim({ limit: 1, now, expiry: leaseExpiry(now, 30) });
    const [row] = rows(t);
    expect(row?.run_at).toBe(runAt.getTime());
    expect(row?.priority).toBe(0);
    expect(typeof row?.locked_until).toBe("number");
    expect((row?.locked_until as number) % 1000).toBe(0);
    expect(claimed?.token.expiry.getTime()).toBe(row?.locked_until);
    await d.close();
  });

  it("claims only rows of the subscription's group, and only due rows", async () => {
    const t = table();
    const b = broker();
    const seen: unknown[] = [];
    await b.publish(t, "later", { group: "g", runAt: new Date(Date.now() + 3_600_000) });
    await b.publish(t, "other group", { group: "h" });
    await b.publish(t, "no group");
    await b.publish(t, "mine", { group: "g" });
    await b.subscribe(
      t,
      (d) => {
        seen.push(d.payload);
        return ack();
      },
      { group: "g" },
    );
    // The handler runs before its ack is written: wait for the ack (the row gone), not the call.
    await waitFor(() => seen.length === 1 && rows(t).length === 3);
    const left = rows(t).map((row) => JSON.parse(row.payload as string));
    expect(left).toEqual(["later", "other group", "no group"]);
    expect(seen).toEqual(["mine"]);
  });
});

describe("lease settlements", () => {
  it("retry keeps the row's runAt and place, and the next delivery reads attempt 2", async () => {
    const t = table();
    const b = broker();
    const attempts: number[] = [];
    const runAt = new Date(Date.now() - 60_000);
    await b.publish(t, "x", { runAt });
    await b.subscribe(t, (d) => {
      attempts.push(d.attempt);
      return d.attempt === 1 ? retry() : ack();
    });
    await waitFor(() => attempts.length === 2 && rows(t).length === 0);
    expect(attempts).toEqual([1, 2]);
  });

  it("retryAfter writes runAt and clears lockedUntil", async () => {
    const t = table();
    const b = broker();
    await b.publish(t, "x");
    let done = false;
    await b.subscribe(t, () => {
      done = true;
      return retryAfter(3_600_000);
    });
    await waitFor(() => done && rows(t)[0]?.locked_until === null);
    const [row] = rows(t);
    expect(row?.run_at as number).toBeGreaterThan(Date.now() + 3_000_000);
    expect(row?.attempt).toBe(2);
  });

  it("ack on a table with processedAt marks the row and clears lockedUntil", async () => {
    const t = table({ columns: { ...leaseTable("x").columns, processedAt: "processed_at" } });
    const b = broker();
    await b.publish(t, "x");
    await b.subscribe(t, () => ack());
    await waitFor(() => rows(t)[0]?.processed_at !== null);
    const [row] = rows(t);
    expect(typeof row?.processed_at).toBe("number");
    expect(row?.locked_until).toBeNull();
  });

  it("dead-letters to a group or a table at maxAttempts", async () => {
    const toGroup = table({ maxAttempts: 2, deadLetter: { group: "dead" } });
    const deadTable = table({}, "dead");
    const toTable = table({ maxAttempts: 1, deadLetter: { table: deadTable.name } });
    const b = broker();
    await b.publish(toGroup, "g");
    await b.publish(toTable, "t", { headers: { h: "1" } });
    const fail = (): never => {
      throw new Error("handler fails");
    };
    await b.subscribe(toGroup, fail, { backoff: { baseMs: 0 } });
    await b.subscribe(toTable, fail, { backoff: { baseMs: 0 } });
    await waitFor(
      () => rows(toGroup)[0]?.queue === "dead" && rows(deadTable).length === 1 && rows(toTable).length === 0,
    );
    expect(rows(toGroup)[0]).toMatchObject({ attempt: 3, locked_until: null });
    expect(rows(deadTable)[0]).toMatchObject({
      payload: '"t"',
      attempt: 2,
      locked_until: null,
      headers: '{"h":"1"}',
    });
  });

  it("a settlement after the lease was taken over fails with LEASE_LOST and changes nothing", async () => {
    const t = table({ lease: 1 });
    const d = driver();
    await d.publish(t, [publishRow('"x"')], {});
    const claimer = await d.open(t, { group: null, logger: silentLogger });
    if (claimer.form !== "lease") throw new Error("expected a lease claimer");
    const first = new Date();
    const [mine] = await claimer.claim({ limit: 1, now: first, expiry: leaseExpiry(first, 1) });
    if (mine === undefined) throw new Error("nothing claimed");
    const later = new Date(mine.token.expiry.getTime() + 1);
    const [theirs] = await claimer.claim({ limit: 1, now: later, expiry: leaseExpiry(later, 30) });
    expect(theirs?.row.attempt).toBe(2);
    const before = rows(t);
    const lost = await claimer
      .settle(mine.row.id, mine.token, { kind: "delete" })
      .catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(BrokerError.is(lost, "LEASE_LOST")).toBe(true);
    expect(await claimer.extend([{ id: mine.row.id, token: mine.token }], leaseExpiry(later, 30))).toEqual([
      null,
    ]);
    expect(rows(t)).toEqual(before);
    if (theirs === undefined) throw new Error("nothing claimed again");
    const extended = await claimer.extend(
      [{ id: theirs.row.id, token: theirs.token }],
      new Date(theirs.token.expiry.getTime() + 5000),
    );
    expect(extended[0]?.expiry.getTime()).toBe(theirs.token.expiry.getTime() + 5000);
    await claimer.settle(theirs.row.id, extended[0] ?? theirs.token, { kind: "delete" });
    expect(rows(t)).toEqual([]);
    await d.close();
  });

  it("a delivery whose row took another token aborts its signal with LEASE_LOST at the next extension", async () => {
    const t = table({ lease: 1 });
    const b = broker();
    await b.publish(t, "x");
    let reason: unknown;
    let attempts = 0;
    await b.subscribe(
      t,
      async (delivery) => {
        attempts += 1;
        await new Promise((resolve) => delivery.signal.addEventListener("abort", resolve));
        reason = delivery.signal.reason;
      },
      { extendLeases: true, pollInterval: 20 },
    );
    await waitFor(() => attempts === 1);
    // Another claim's token in the row, written from a second connection.
    sqlite.db.prepare(`UPDATE "${t.name}" SET locked_until = locked_until + 60000`).run();
    await waitFor(() => reason !== undefined, 20_000, "the lease to be lost");
    expect(BrokerError.is(reason, "LEASE_LOST")).toBe(true);
  });
});

describe("FIFO groups in the lease form", () => {
  it("delivers a group's rows one at a time in order, while other groups run", async () => {
    const t = table({ fifo: true });
    const b = broker();
    const order: string[] = [];
    let inWork = 0;
    let maxInWork = 0;
    for (let i = 0; i < 6; i += 1) await b.publish(t, `a${i}`, { group: "a" });
    await b.subscribe(
      t,
      async (d) => {
        inWork += 1;
        maxInWork = Math.max(maxInWork, inWork);
        await new Promise((resolve) => setTimeout(resolve, 5));
        order.push(d.payload as string);
        inWork -= 1;
        return (d.payload as string) === "a2" && d.attempt === 1 ? retry() : ack();
      },
      { group: "a", workers: 4, batch: 4, pollInterval: 20 },
    );
    await waitFor(() => rows(t).length === 0);
    expect(order).toEqual(["a0", "a1", "a2", "a2", "a3", "a4", "a5"]);
    expect(maxInWork).toBe(1);
  });

  it("takes nothing while the head of the group is in work, even when later rows are due", async () => {
    const t = table({ fifo: true });
    const d = driver();
    const row = (payload: string) => ({
      payload,
      group: "g",
      runAt: null,
      priority: null,
      headers: null,
      values: {},
    });
    await d.publish(t, [row('"1"'), row('"2"')], {});
    const claimer = await d.open(t, { group: "g", logger: silentLogger });
    if (claimer.form !== "lease") throw new Error("expected a lease claimer");
    const now = new Date();
    const first = await claimer.claim({ limit: 5, now, expiry: leaseExpiry(now, 30) });
    expect(first.map((c) => c.row.payload)).toEqual(["1"]);
    expect(await claimer.claim({ limit: 5, now, expiry: leaseExpiry(now, 30) })).toEqual([]);
    const head = first[0];
    if (head === undefined) throw new Error("nothing claimed");
    await claimer.settle(head.row.id, head.token, { kind: "delete" });
    const second = await claimer.claim({ limit: 5, now, expiry: leaseExpiry(now, 30) });
    expect(second.map((c) => c.row.payload)).toEqual(["2"]);
    await d.close();
  });
});

describe("payloads and headers", () => {
  it("round-trips binary, empty, unicode and 1 MB payloads and headers", async () => {
    const bytes = table({ payloadType: "bytes" }, "bytes");
    const text = table({ payloadType: "text" }, "text");
    const json = table({}, "json");
    const b = broker();
    const big = "x".repeat(1024 * 1024);
    const binary = new Uint8Array([0, 255, 1, 254, 0, 10, 13]);
    const got: Record<string, unknown[]> = { bytes: [], text: [], json: [] };
    const headers: unknown[] = [];
    for (const [name, t] of [
      ["bytes", bytes],
      ["text", text],
      ["json", json],
    ] as const) {
      await b.subscribe(t, (d) => {
        got[name]?.push(d.payload);
        headers.push(d.headers);
        return ack();
      });
    }
    await b.publishMany(bytes, [{ payload: binary }, { payload: new Uint8Array() }]);
    await b.publishMany(text, [{ payload: "" }, { payload: "héllo ✓ 𝄞 中文" }, { payload: big }]);
    await b.publishMany(json, [
      { payload: { s: "ünï", n: [1, null] }, headers: { trace: "t-1" } },
      { payload: null },
    ]);
    await waitFor(
      () => (got.bytes?.length ?? 0) === 2 && (got.text?.length ?? 0) === 3 && (got.json?.length ?? 0) === 2,
    );
    expect((got.bytes ?? []).map((p) => Array.from(p as Uint8Array))).toEqual([Array.from(binary), []]);
    expect(got.text).toEqual(["", "héllo ✓ 𝄞 中文", big]);
    expect(got.json).toEqual([{ s: "ünï", n: [1, null] }, null]);
    expect(headers).toContainEqual({ trace: "t-1" });
  });
});

describe("publish", () => {
  it("returns ids in order, chunking past SQLite's parameter limit in one transaction", async () => {
    const t = table({ extraColumns: ["account"] });
    const d = driver();
    const many = Array.from({ length: 7000 }, (_, i) =>
      publishRow(JSON.stringify(i), {
        priority: i % 3 === 0 ? null : i,
        values: i % 5 === 0 ? {} : { account: i },
      }),
    );
    const ids = await d.publish(t, many, {});
    expect(ids).toHaveLength(7000);
    const stored = sqlite.db
      .prepare(`SELECT id, payload, priority, account FROM "${t.name}"`)
      .all() as Record<string, unknown>[];
    const byId = new Map(stored.map((row) => [row.id, row]));
    ids.forEach((id, i) => {
      const row = byId.get(id);
      expect(row?.payload).toBe(JSON.stringify(i));
      expect(row?.priority).toBe(i % 3 === 0 ? 0 : i);
      expect(row?.account).toBe(i % 5 === 0 ? null : i);
    });
    await d.close();
  });

  it("publishes inside the caller's open transaction on its own Database: rollback leaves no row", async () => {
    const t = table();
    const b = broker();
    expect(b.driver.capabilities.transactionalPublish).toBe(true);
    const client = openConnection(sqlite.file);
    client.exec("BEGIN IMMEDIATE");
    await b.publish(t, "rolled back", { client });
    client.exec("ROLLBACK");
    client.exec("BEGIN IMMEDIATE");
    const id = await b.publish(t, "kept", { client });
    expect(rows(t)).toEqual([]);
    client.exec("COMMIT");
    client.close();
    expect(rows(t).map((row) => [row.id, row.payload])).toEqual([[id, '"kept"']]);
  });
});

describe("database ownership", () => {
  it("a driver on the user's Database never closes it; a driver on a filename closes its own", async () => {
    const own = openConnection(sqlite.file);
    const onUser = createSqliteDriver({ database: own });
    await onUser.close();
    expect(own.open).toBe(true);
    own.close();
    const onFile = createSqliteDriver({ filename: sqlite.file });
    expect(onFile.database.pragma("journal_mode", { simple: true })).toBe("wal");
    await onFile.close();
    expect(onFile.database.open).toBe(false);
    const t = table();
    await expect(onFile.open(t, { group: null, logger: silentLogger })).rejects.toMatchObject({
      code: "CLOSED",
    });
  });

  it("runs claims on the user's Database and waits for the user's own transaction to end", async () => {
    const own = openConnection(sqlite.file);
    const t = table();
    const b = createBroker({ driver: createSqliteDriver({ database: own }), logger: silentLogger });
    brokers.push(b);
    const seen: unknown[] = [];
    own.exec("BEGIN IMMEDIATE");
    await b.publish(t, "in the user's transaction", { client: own });
    await b.subscribe(t, (d) => {
      seen.push(d.payload);
      return ack();
    });
    expect(seen).toEqual([]);
    own.exec("COMMIT");
    await waitFor(() => seen.length === 1);
    await b.close();
    expect(own.open).toBe(true);
    own.close();
  });
});
