import {
  ack,
  type Broker,
  createBroker,
  defineTable,
  retry,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import { afterEach, describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import { claimColumns, publishRow, uniqueName, useSqliteFile, waitFor } from "./support.js";

// The file's hooks close the drivers after each test: registered first, they run after this
// file's own `afterEach`, which closes the brokers.
const sqlite = useSqliteFile();
const { driver, rows } = sqlite;
const brokers: Broker[] = [];

afterEach(async () => {
  await Promise.all(brokers.splice(0).map((broker) => broker.close({ timeout: 2000 })));
});

function broker(): Broker {
  const made = createBroker({ driver: driver(), logger: silentLogger });
  brokers.push(made);
  return made;
}

function table(key = "{account}"): TableDefinition {
  const name = uniqueName("adv");
  const defined = defineTable({
    name,
    columns: { ...claimColumns },
    extraColumns: ["account"],
    advisoryLock: `${name}-${key}`,
  });
  sqlite.db.exec(driver().schemaSql(defined));
  return defined;
}

describe("advisory keys", () => {
  it("runs rows with one key one at a time, in claim order, while other keys run", async () => {
    const t = table();
    const b = broker();
    const inWork = new Map<string, number>();
    let overlap = false;
    let otherKeysTogether = false;
    const order: Record<string, unknown[]> = {};
    await b.publishMany(
      t,
      Array.from({ length: 12 }, (_, i) => ({ payload: i, values: { account: i < 8 ? "a" : "b" } })),
    );
    await b.subscribe(
      t,
      async (d) => {
        const account = String(d.row.account);
        inWork.set(account, (inWork.get(account) ?? 0) + 1);
        if ((inWork.get(account) ?? 0) > 1) overlap = true;
        if ([...inWork.values()].filter((n) => n > 0).length > 1) otherKeysTogether = true;
        await new Promise((resolve) => setTimeout(resolve, 10));
        const list = order[account] ?? [];
        list.push(d.payload);
        order[account] = list;
        inWork.set(account, (inWork.get(account) ?? 0) - 1);
        return ack();
      },
      { workers: 4, batch: 4, pollInterval: 10 },
    );
    await waitFor(() => rows(t).length === 0);
    expect(overlap).toBe(false);
    expect(otherKeysTogether).toBe(true);
    expect(order.a).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(order.b).toEqual([8, 9, 10, 11]);
  });

  it("keeps keys per database file: a second driver on the same file passes over a held key", async () => {
    const t = table();
    const first = driver();
    const second = driver();
    await first.publish(
      t,
      [
        publishRow("1", { values: { account: 7 } }),
        publishRow("2", { values: { account: 7 } }),
        publishRow("3", { values: { account: null } }),
      ],
      {},
    );
    const a = await first.open(t, { group: null, logger: silentLogger });
    const b = await second.open(t, { group: null, logger: silentLogger });
    if (a.form !== "advisory" || b.form !== "advisory") throw new Error("expected advisory claimers");
    const now = new Date();
    const mine = await a.claim({ limit: 1, now });
    expect(mine.map((c) => [c.row.payload, c.token.key, c.row.attempt])).toEqual([[1, `${t.name}-7`, 1]]);
    const theirs = await b.claim({ limit: 5, now });
    expect(theirs.map((c) => [c.row.payload, c.token.key])).toEqual([[3, `${t.name}-`]]);
    expect(rows(t).map((row) => row.attempt)).toEqual([2, 1, 2]);
    const held = mine[0];
    if (held === undefined) throw new Error("nothing claimed");
    await a.release(held.token);
    const next = await b.claim({ limit: 5, now });
    expect(next.map((c) => [c.row.payload, c.row.attempt])).toEqual([[1, 2]]);
  });

  it("counts the attempt at the take and drops the key after settling", async () => {
    const t = table();
    const b = broker();
    const attempts: number[] = [];
    await b.publish(t, "x", { values: { account: 1 } });
    await b.subscribe(
      t,
      (d) => {
        attempts.push(d.attempt);
        return d.attempt < 3 ? retry() : ack();
      },
      { pollInterval: 10 },
    );
    await waitFor(() => rows(t).length === 0);
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("renders literal parts as parameters, so a key with quotes and SQL stays text", async () => {
    const t = table("{account}' || (SELECT 1) || '");
    const d = driver();
    await d.publish(t, [publishRow("1", { values: { account: "x" } })], {});
    const claimer = await d.open(t, { group: null, logger: silentLogger });
    if (claimer.form !== "advisory") throw new Error("expected an advisory claimer");
    const [claimed] = await claimer.claim({ limit: 1, now: new Date() });
    expect(claimed?.token.key).toBe(`${t.name}-x' || (SELECT 1) || '`);
  });

  it("keeps the keys of a private in-memory database per connection", async () => {
    const t = defineTable({
      name: uniqueName("mem"),
      columns: { id: "id", payload: "payload" },
      advisoryLock: "same-key",
    });
    const memory = createSqliteDriver({ filename: ":memory:" });
    const other = createSqliteDriver({ filename: ":memory:" });
    sqlite.closeAfterTest(memory, other);
    for (const d of [memory, other]) {
      d.database.exec(d.schemaSql(t));
      await d.publish(t, [publishRow("1")], {});
    }
    const a = await memory.open(t, { group: null, logger: silentLogger });
    const b = await other.open(t, { group: null, logger: silentLogger });
    if (a.form !== "advisory" || b.form !== "advisory") throw new Error("expected advisory claimers");
    const now = new Date();
    expect((await a.claim({ limit: 1, now })).map((c) => c.token.key)).toEqual(["same-key"]);
    expect((await b.claim({ limit: 1, now })).map((c) => c.token.key)).toEqual(["same-key"]);
  });
});
