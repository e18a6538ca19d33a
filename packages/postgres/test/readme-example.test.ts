import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendEmails } from "./example/usage.js";
import { TestDb, uniqueName } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

describe("the README's usage example", () => {
  it("runs: the published email is sent and its row deleted", async () => {
    const table = uniqueName("rc_readme");
    const sent: string[] = [];
    try {
      await sendEmails(db.url, table, async (to) => {
        sent.push(to);
      });
    } finally {
      await db.query(`DROP TABLE IF EXISTS "${table}"`);
    }
    expect(sent).toEqual(["ada@example.com"]);
  });

  it("is what the README shows, line for line", () => {
    const source = readFileSync(new URL("./example/usage.ts", import.meta.url), "utf8");
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const block = /\/\/ usage:start\n([\s\S]*?)\n\s*\/\/ usage:end/.exec(source)?.[1];
    expect(block).toBeDefined();
    const lines = (block ?? "").split("\n").map((line) => line.replace(/^ {2}/, ""));
    expect(readme).toContain(lines.join("\n"));
  });
});
