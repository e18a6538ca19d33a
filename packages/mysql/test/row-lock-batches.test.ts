/**
 * Two processes draining one table side by side with prefetch: each coalesced ack touches only
 * its own rows (by primary key, whatever the table's size), so row lock batches never wait on
 * each other's rows, and no ack deadlocks (and re-runs a whole batch) without a fault.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createBroker, silentLogger, type TableDescription } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { mysqlUrl, newDriver, quote, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

const child = fileURLToPath(new URL("./drain-child.mjs", import.meta.url));

/** A draining child process and what it printed so far. */
interface Drainer {
  readonly process: ChildProcess;
  readonly lines: string[];
}

async function startDrainer(description: TableDescription, options: object): Promise<Drainer> {
  const process_ = spawn(process.execPath, [child, JSON.stringify(description), JSON.stringify(options)], {
    env: { ...process.env, ROWCLAIM_MYSQL_URL: await mysqlUrl() },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: string[] = [];
  let partial = "";
  process_.stdout?.on("data", (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const parts = text.split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  });
  return { process: process_, lines };
}

async function stop(drainer: Drainer): Promise<void> {
  if (drainer.process.exitCode !== null) return;
  const exited = new Promise((resolve) => drainer.process.once("exit", resolve));
  drainer.process.kill("SIGKILL");
  await exited;
}

/** Rows not yet settled: every row, or those not marked processed on a table with processedAt. */
async function unsettled(description: TableDescription): Promise<number> {
  const processedAt = description.columns.processedAt;
  const [rows] = await db.admin.query(
    `SELECT COUNT(*) AS n FROM ${quote(description.name)}${processedAt === undefined ? "" : ` WHERE ${quote(processedAt)} IS NULL`}`,
  );
  return Number((rows as { n: unknown }[])[0]?.n);
}

const base = { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" };

describe("batches of two processes with prefetch ack without deadlocking each other", () => {
  const cases: [string, number, TableDescription["columns"]][] = [
    ["row lock, acks deleting", 400, base],
    ["row lock, acks deleting", 3000, base],
    ["row lock, acks marking processed", 400, { ...base, processedAt: "processed_at" }],
    ["lease, acks deleting", 400, { ...base, lockedUntil: "locked_until" }],
  ];
  it.each(cases)(
    "%s: 2 processes x prefetch 100 drain %i rows, every handler runs once and no settlement or claim fails",
    async (_form, count, columns) => {
      const description: TableDescription = { name: uniqueName("batches"), columns };
      const table = await db.tables.create(description);
      const options = { workers: 4, prefetch: 100 };
      const drainers = [await startDrainer(description, options), await startDrainer(description, options)];
      const broker = createBroker({ driver: await newDriver(), logger: silentLogger });
      try {
        await waitFor(
          () => drainers.every((drainer) => drainer.lines.includes("subscribed")),
          30_000,
          "both children to subscribe",
        );
        const ids = await broker.publishMany(
          table,
          Array.from({ length: count }, (_, n) => ({ payload: { n } })),
        );
        await waitFor(async () => (await unsettled(description)) === 0, 120_000, "every row to settle");
        const lines = drainers.flatMap((drainer) => drainer.lines);
        const ran = lines.filter((line) => line.startsWith("ran ")).map((line) => line.slice(4));
        expect(lines.filter((line) => line.includes("-error "))).toEqual([]);
        expect(ran.toSorted()).toEqual(ids.map(String).toSorted());
      } finally {
        await broker.close();
        for (const drainer of drainers) await stop(drainer);
      }
    },
    180_000,
  );
});
