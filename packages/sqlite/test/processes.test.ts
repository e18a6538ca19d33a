import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { defineTable } from "@rowclaim/core";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import { leaseTable, openConnection, publishRow, tempDatabaseFile, uniqueName } from "./support.js";

const temp = tempDatabaseFile();
afterAll(() => temp.remove());

function drain(env: Record<string, string>): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL("./drain-child.mjs", import.meta.url))], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out) as unknown[]) : reject(new Error(`child exited ${code}`)),
    );
  });
}

describe("two processes on one database file (lease form)", () => {
  it("together deliver every row, and no row twice", async () => {
    const description = leaseTable(uniqueName("procs"));
    const table = defineTable(description);
    const db = openConnection(temp.file);
    const driver = createSqliteDriver({ database: db });
    db.exec(driver.schemaSql(table));
    const total = 600;
    await driver.publish(
      table,
      Array.from({ length: total }, (_, i) => publishRow(String(i))),
      {},
    );
    const env = { ROWCLAIM_SQLITE_FILE: temp.file, ROWCLAIM_DRAIN_TABLE: JSON.stringify(description) };
    const [a, b] = await Promise.all([drain(env), drain(env)]);
    const all = [...(a ?? []), ...(b ?? [])];
    expect(all).toHaveLength(total);
    expect(new Set(all).size).toBe(total);
    expect(db.prepare(`SELECT count(*) AS n FROM "${table.name}"`).get()).toEqual({ n: 0 });
    db.close();
  });
});
