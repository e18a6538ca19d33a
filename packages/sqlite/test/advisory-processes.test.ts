/**
 * Two processes on one database file in the advisory lock form: keys are kept in the process,
 * so the driver lets one process at a time run advisory subscriptions on a file (the second is
 * refused at subscribe until the first ends or dies). No row is settled twice, and none is lost,
 * with or without processes killed mid-run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { defineTable, type TableDescription } from "@rowclaim/core";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import {
  claimColumns,
  openConnection,
  publishRow,
  tempDatabaseFile,
  uniqueName,
  waitFor,
} from "./support.js";

const temp = tempDatabaseFile();
afterAll(() => temp.remove());

const childScript = fileURLToPath(new URL("./advisory-child.mjs", import.meta.url));

function start(env: Record<string, string>): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [childScript], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code, signal) => {
      if (code !== 0 && signal === null) process.stderr.write(err);
      resolve(code);
    }),
  );
  return { child, exited };
}

async function setUp(rows: number): Promise<{
  env: Record<string, string>;
  settledTwice: () => unknown[];
  settled: () => number;
  remaining: () => number;
  close: () => void;
}> {
  const name = uniqueName("adv_procs");
  const description: TableDescription = {
    name,
    columns: { ...claimColumns },
    extraColumns: ["account"],
    advisoryLock: `${name}-{account}`,
  };
  const table = defineTable(description);
  const db = openConnection(temp.file);
  const driver = createSqliteDriver({ database: db });
  db.exec(driver.schemaSql(table));
  const log = `${name}_log`;
  db.exec(`CREATE TABLE "${log}" (row_id INTEGER NOT NULL, pid INTEGER NOT NULL)`);
  await driver.publish(
    table,
    Array.from({ length: rows }, (_, i) =>
      publishRow(JSON.stringify(i), { values: { account: String(i % 50) } }),
    ),
    {},
  );
  return {
    env: {
      ROWCLAIM_SQLITE_FILE: temp.file,
      ROWCLAIM_ADVISORY_TABLE: JSON.stringify(description),
      ROWCLAIM_ADVISORY_LOG: log,
    },
    settledTwice: () =>
      db.prepare(`SELECT row_id, count(*) AS n FROM "${log}" GROUP BY row_id HAVING count(*) > 1`).all(),
    settled: () => (db.prepare(`SELECT count(DISTINCT row_id) AS n FROM "${log}"`).get() as { n: number }).n,
    remaining: () => (db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n,
    close: () => db.close(),
  };
}

describe("two processes on one database file (advisory lock form)", () => {
  it("settle 1,000 rows with no row settled twice and none lost", async () => {
    const run = await setUp(1000);
    try {
      const children = [start(run.env), start(run.env)];
      const codes = await Promise.all(children.map((c) => c.exited));
      expect(codes).toEqual([0, 0]);
      expect(run.settledTwice()).toEqual([]);
      expect(run.remaining()).toBe(0);
      expect(run.settled()).toBe(1000);
    } finally {
      run.close();
    }
  }, 120_000);

  it("settle 1,000 rows with processes killed mid-run: no row settled twice and none lost", async () => {
    const run = await setUp(1000);
    try {
      const running = [start(run.env), start(run.env)];
      let kills = 0;
      // Kill a process three times once rows move, starting a new one each time.
      for (let kill = 0; kill < 3; kill += 1) {
        const before = run.remaining();
        await waitFor(() => run.remaining() < before - 60 || run.remaining() === 0, 60_000, "progress");
        if (run.remaining() === 0) break;
        const victim = running.shift();
        victim?.child.kill("SIGKILL");
        kills += 1;
        await victim?.exited;
        running.push(start(run.env));
      }
      await Promise.all(running.map((c) => c.exited));
      expect(kills).toBeGreaterThan(0);
      expect(run.settledTwice()).toEqual([]);
      expect(run.remaining()).toBe(0);
    } finally {
      run.close();
    }
  }, 180_000);
});
