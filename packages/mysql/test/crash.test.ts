import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ack, createBroker, type Delivery, silentLogger, type TableDescription } from "@rowclaim/core";
import { createPool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { createMysqlDriver, ownPoolOptions, type PoolLike } from "../src/index.js";
import { mysqlUrl, newDriver, quote, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

const child = fileURLToPath(new URL("./crash-child.mjs", import.meta.url));

function describeForm(form: "rowLock" | "lease" | "advisory", name: string): TableDescription {
  const columns = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" };
  if (form === "lease") return { name, columns: { ...columns, lockedUntil: "locked_until" }, lease: 1 };
  if (form === "advisory") return { name, columns, advisoryLock: `${name}-{id}` };
  return { name, columns };
}

/** Starts the child on `description` and resolves once its handler holds a row. */
async function childInWork(description: TableDescription): Promise<ChildProcess> {
  const process_ = spawn(process.execPath, [child, JSON.stringify(description)], {
    env: { ...process.env, ROWCLAIM_MYSQL_URL: await mysqlUrl() },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  process_.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  await waitFor(() => output.includes("in-work"), 30_000, "the child's handler to run");
  return process_;
}

async function kill(process_: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => process_.once("exit", resolve));
  process_.kill("SIGKILL");
  await exited;
}

describe("a child process SIGKILLed mid-handler gives its row back as its form says", () => {
  const cases: ["rowLock" | "lease" | "advisory", number, string][] = [
    ["rowLock", 1, "at once, no attempt spent"],
    ["advisory", 2, "at once, one attempt spent"],
    ["lease", 2, "after its 1 s lease, one attempt spent"],
  ];
  it.each(cases)("%s: the row returns with attempt %i (%s)", async (form, attempt) => {
    const description = describeForm(form, uniqueName(`crash_${form}`));
    const table = await db.tables.create(description);
    const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
    try {
      await broker.publish(table, { crash: form });
      const process_ = await childInWork(description);
      await kill(process_);
      if (form === "lease") {
        const [row] = await readAll(db.admin, table);
        expect(row?.locked_until).toBeInstanceOf(Date);
        expect(row?.attempt).toBe(2);
      }
      const seen: number[] = [];
      await broker.subscribe(table, (delivery: Delivery) => void seen.push(delivery.attempt), {
        pollInterval: 50,
      });
      await waitFor(() => seen.length === 1, 30_000, "the row to be delivered again");
      expect(seen).toEqual([attempt]);
      await waitFor(async () => (await readAll(db.admin, table)).length === 0, 10_000, "the ack");
    } finally {
      await broker.close();
    }
  });
});

describe("KILL CONNECTION on a delivery's connection returns the row and the broker goes on", () => {
  it.each([
    ["rowLock", "1 (no attempt spent)"],
    ["advisory", "2 (the take counted one)"],
  ] as const)(
    "in the %s form the row comes back with attempt %s, and a later row is delivered",
    async (form, _attempt) => {
      const description = describeForm(form, uniqueName(`kill_${form}`));
      const table = await db.tables.create(description);
      // A pool of the test's own (the driver never ends it), recording which sessions it hands out:
      // with one worker, the last one handed out before the handler runs holds the delivery.
      const pool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 6 });
      const sessions: number[] = [];
      const recording: PoolLike = {
        query: pool.query.bind(pool) as PoolLike["query"],
        end: () => pool.end(),
        getConnection: async () => {
          const connection = await pool.getConnection();
          sessions.push(connection.threadId);
          return connection;
        },
      };
      const broker = createBroker({ driver: createMysqlDriver({ pool: recording }), logger: silentLogger });
      try {
        await broker.publish(table, "first");
        const deliveries: { payload: unknown; attempt: number }[] = [];
        let killed = false;
        await broker.subscribe(
          table,
          async (delivery: Delivery) => {
            deliveries.push({ payload: delivery.payload, attempt: delivery.attempt });
            if (!killed) {
              killed = true;
              const holder = sessions.at(-1);
              if (form === "advisory") {
                const [rows] = await db.admin.query(
                  "SELECT IS_USED_LOCK(CONCAT(LOWER(DATABASE()), '.', ?)) AS holder",
                  [`${table.name}-${String(delivery.id)}`],
                );
                expect((rows as { holder: number | null }[])[0]?.holder).toBe(holder);
              }
              await db.admin.query(`KILL CONNECTION ${Number(holder)}`);
            }
            return ack();
          },
          { pollInterval: 50 },
        );
        await waitFor(() => deliveries.length >= 2, 30_000, "the row to come back");
        expect(deliveries[1]).toEqual({ payload: "first", attempt: form === "advisory" ? 2 : 1 });
        await waitFor(async () => (await readAll(db.admin, table)).length === 0, 10_000, "the ack");
        await broker.publish(table, "second");
        await waitFor(
          () => deliveries.some((delivery) => delivery.payload === "second"),
          10_000,
          "a later row",
        );
        await waitFor(async () => (await readAll(db.admin, table)).length === 0, 10_000, "the later ack");
        const [rows] = await db.admin.query(`SELECT COUNT(*) AS n FROM ${quote(table.name)}`);
        expect((rows as { n: number }[])[0]?.n).toBe(0);
      } finally {
        await broker.close();
        await pool.end();
      }
    },
  );
});
