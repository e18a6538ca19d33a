import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createBroker, type Delivery, silentLogger, type TableDefinition } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

const childPath = fileURLToPath(new URL("./crash-child.mjs", import.meta.url));

/** Runs the crash child on `table` until it is inside the handler, then SIGKILLs it. */
async function killMidHandler(table: TableDefinition): Promise<void> {
  const child = spawn(process.execPath, [childPath], {
    env: {
      ...process.env,
      ROWCLAIM_POSTGRES_URL: db.url,
      ROWCLAIM_CRASH_TABLE: JSON.stringify(table.description),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  await waitFor(() => output.includes("handling "), { what: "the child to enter its handler" });
  child.kill("SIGKILL");
  await exited;
}

async function rowOf(table: TableDefinition): Promise<Record<string, unknown>> {
  const rows = await db.rows(table);
  expect(rows).toHaveLength(1);
  return rows[0] as Record<string, unknown>;
}

/** Whether another session can lock the row now (SKIP LOCKED passes over rows a live transaction holds). */
async function lockable(table: TableDefinition): Promise<boolean> {
  const client = await db.pool.connect();
  try {
    await client.query("BEGIN");
    const result = await client.query(`SELECT 1 FROM "${table.name}" FOR UPDATE SKIP LOCKED`);
    await client.query("ROLLBACK");
    return result.rows.length === 1;
  } finally {
    client.release();
  }
}

describe("a child process SIGKILLed mid-handler", () => {
  it("returns its row lock row at once, with no attempt spent", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_crash_rl")));
    await db.query(`INSERT INTO "${table.name}" (payload) VALUES ('{"n":1}')`);
    await killMidHandler(table);
    await waitFor(() => lockable(table), { timeout: 5000, what: "the row lock to be released" });
    expect((await rowOf(table)).attempt).toBe(1);
  });

  it("returns its advisory row at once, with one attempt spent", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_crash_adv")));
    await db.query(`INSERT INTO "${table.name}" (payload, account) VALUES ('{"n":1}', 'a')`);
    await killMidHandler(table);
    expect((await rowOf(table)).attempt).toBe(2);
    const key = `${table.name}-a`;
    await waitFor(
      async () => {
        const [row] = await db.query("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [key]);
        if (row?.locked === true) await db.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]);
        return row?.locked === true;
      },
      { timeout: 5000, what: "the key's lock to be dropped" },
    );
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const seen: Delivery[] = [];
    await broker.subscribe(table, (delivery) => {
      seen.push(delivery);
    });
    await waitFor(() => seen.length === 1, { what: "the row to be delivered again" });
    expect(seen[0]?.attempt).toBe(2);
    await broker.close();
  });

  it("returns its lease row once the lease (1 s) ran out, with one attempt spent", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_crash_lease")));
    await db.query(`INSERT INTO "${table.name}" (payload) VALUES ('{"n":1}')`);
    await killMidHandler(table);
    const crashed = await rowOf(table);
    expect(crashed.attempt).toBe(2);
    const lockedUntil = crashed.locked_until as Date;
    expect(lockedUntil).toBeInstanceOf(Date);
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const seen: { delivery: Delivery; at: number }[] = [];
    await broker.subscribe(
      table,
      (delivery) => {
        seen.push({ delivery, at: Date.now() });
      },
      { pollInterval: 50 },
    );
    await waitFor(() => seen.length === 1, { what: "the row to be delivered after its lease" });
    expect(seen[0]?.delivery.attempt).toBe(2);
    expect(seen[0]?.at).toBeGreaterThanOrEqual(lockedUntil.getTime());
    await broker.close();
  });
});
