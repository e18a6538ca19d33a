import { createHash } from "node:crypto";
import { createBroker, type Delivery, silentLogger } from "@rowclaim/core";
import { beforeAll, describe, expect, it } from "vitest";
import { HeldHandler, newDriver, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();
let database: string;

beforeAll(async () => {
  const [rows] = await db.admin.query("SELECT DATABASE() AS db");
  database = String((rows as { db: string }[])[0]?.db).toLowerCase();
});

async function usedBy(name: string): Promise<unknown> {
  const [rows] = await db.admin.query("SELECT IS_USED_LOCK(?) AS holder", [name]);
  return (rows as { holder: unknown }[])[0]?.holder;
}

/** An advisory table whose key is the `k` column as written. */
function keyedTable(name: string, prefix: string = name) {
  return {
    name,
    columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" },
    extraColumns: ["k"],
    advisoryLock: `${prefix}{k}`,
  };
}

/** Runs one delivery of a row with key suffix `suffix` and calls `inWork` while it is held. */
async function duringDelivery(
  table: ReturnType<typeof keyedTable>,
  suffix: string,
  inWork: () => Promise<void>,
): Promise<void> {
  const defined = await db.tables.create(table);
  const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
  const held = new HeldHandler();
  try {
    await broker.publish(defined, "x", { values: { k: suffix } });
    await broker.subscribe(defined, held.handle, { pollInterval: 50 });
    await waitFor(() => held.running, 10_000, "the handler to run");
    await inWork();
    held.release();
    await waitFor(async () => (await readAll(db.admin, defined)).length === 0, 10_000, "the ack");
  } finally {
    held.release();
    await broker.close();
  }
}

describe("the advisory lock name is the database name, a dot and the key", () => {
  it("IS_USED_LOCK shows `test.<key>` while the delivery is in work and NULL after", async () => {
    const name = uniqueName("adv");
    const lockName = `${database}.${name}-k1`;
    await duringDelivery(keyedTable(name, `${name}-`), "k1", async () => {
      expect(await usedBy(lockName)).not.toBeNull();
    });
    await waitFor(async () => (await usedBy(lockName)) === null, 10_000, "the lock to be released");
  });

  it("a 64-character name is locked as written, a 65-character one by its SHA-256", async () => {
    const name = uniqueName("adv64");
    const prefix = `${name}-`;
    const room = 64 - `${database}.${prefix}`.length;
    const exact = `${database}.${prefix}${"a".repeat(room)}`;
    expect(exact).toHaveLength(64);
    await duringDelivery(keyedTable(name, prefix), "a".repeat(room), async () => {
      expect(await usedBy(exact)).not.toBeNull();
    });

    const longName = uniqueName("adv65");
    const longPrefix = `${longName}-`;
    const longRoom = 65 - `${database}.${longPrefix}`.length;
    const long = `${database}.${longPrefix}${"b".repeat(longRoom)}`;
    expect(long).toHaveLength(65);
    const hashed = createHash("sha256").update(long).digest("hex");
    await duringDelivery(keyedTable(longName, longPrefix), "b".repeat(longRoom), async () => {
      expect(await usedBy(hashed)).not.toBeNull();
    });
    expect(await usedBy(hashed)).toBeNull();
  });
});

describe("advisory keys belong to the server, not the table", () => {
  it("two tables whose keys match wait for each other; other keys run meanwhile", async () => {
    const prefix = `${uniqueName("shared")}-`;
    const first = await db.tables.create(keyedTable(uniqueName("sa"), prefix));
    const second = await db.tables.create(keyedTable(uniqueName("sb"), prefix));
    const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
    const held = new HeldHandler();
    const seen: string[] = [];
    try {
      await broker.publish(first, "first", { values: { k: "same" } });
      await broker.subscribe(first, held.handle, { pollInterval: 30 });
      await waitFor(() => held.running, 10_000, "the first table's delivery");
      await broker.publish(second, "blocked", { values: { k: "same" } });
      await broker.publish(second, "free", { values: { k: "other" } });
      await broker.subscribe(second, (delivery: Delivery) => void seen.push(delivery.payload as string), {
        pollInterval: 30,
        workers: 2,
      });
      await waitFor(() => seen.includes("free"), 10_000, "the row with another key");
      // A few more claim rounds pass while the first table still holds the key.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(seen).toEqual(["free"]);
      held.release();
      await waitFor(() => seen.includes("blocked"), 10_000, "the row with the shared key");
    } finally {
      held.release();
      await broker.close();
    }
  });
});

describe("an advisory claim counts the attempt at the take", () => {
  it("a row whose attempt column reads 3 is delivered as attempt 3 and holds 4 while in work", async () => {
    const table = await db.tables.create(keyedTable(uniqueName("att")));
    const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
    try {
      const id = await broker.publish(table, "x", { values: { k: "1" } });
      await db.admin.query(`UPDATE \`${table.name}\` SET attempt = 3 WHERE id = ?`, [id]);
      const attempts: [number, unknown][] = [];
      await broker.subscribe(
        table,
        async (delivery) => {
          const [rows] = await db.admin.query(`SELECT attempt FROM \`${table.name}\` WHERE id = ?`, [id]);
          attempts.push([delivery.attempt, (rows as { attempt: number }[])[0]?.attempt]);
        },
        { pollInterval: 30 },
      );
      await waitFor(() => attempts.length === 1, 10_000, "the delivery");
      expect(attempts).toEqual([[3, 4]]);
    } finally {
      await broker.close();
    }
  });
});
