// `rowclaim dashboard`: serves the dashboard over the config module's tables behind basic
// authentication, and refuses to start without a password. The built bin runs as a child
// process (it serves until a signal), stopped by its own pid.
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineTable } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { binPath, packageDir } from "./build.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
});

function sqliteConfig(): { file: string; table: string } {
  const dir = tempDir();
  const table = uniquePrefix("dashboard");
  const description = {
    name: table,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      lockedUntil: "locked_until",
    },
  };
  const url = join(dir, "queue.db");
  const driver = createSqliteDriver({ filename: url });
  driver.database.exec(driver.schemaSql(defineTable(description)));
  void driver.close();
  const file = join(dir, "rowclaim.config.mjs");
  writeFileSync(file, `export default ${JSON.stringify({ url, tables: [description] })};\n`);
  return { file, table };
}

describe("rowclaim dashboard", () => {
  it("refuses to start without ROWCLAIM_DASHBOARD_PASSWORD (exit 2)", async () => {
    const { file } = sqliteConfig();
    const previous = process.env.ROWCLAIM_DASHBOARD_PASSWORD;
    delete process.env.ROWCLAIM_DASHBOARD_PASSWORD;
    try {
      const result = await runMain(["dashboard", "--config", file]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("ROWCLAIM_DASHBOARD_PASSWORD");
    } finally {
      if (previous !== undefined) process.env.ROWCLAIM_DASHBOARD_PASSWORD = previous;
    }
  });

  it("serves the config's tables to the user with the password, and nobody else", async () => {
    const { file, table } = sqliteConfig();
    const child = spawn(
      process.execPath,
      [binPath, "dashboard", "--config", file, "--port", "0", "--user", "ops"],
      {
        cwd: packageDir,
        env: { ...process.env, ROWCLAIM_DASHBOARD_PASSWORD: "s3cret" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    const origin = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const match = /listening on (http:\/\/[^/\s]+)\//.exec(out);
        if (match?.[1] !== undefined) resolve(match[1]);
      });
      child.once("exit", (code) => reject(new Error(`rowclaim dashboard exited ${String(code)}: ${out}`)));
    });
    expect((await fetch(`${origin}/`)).status).toBe(401);
    const page = await fetch(`${origin}/`, {
      headers: { authorization: `Basic ${Buffer.from("ops:s3cret").toString("base64")}` },
    });
    expect(page.status, await page.clone().text()).toBe(200);
    expect(await page.text()).toContain(table);
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
