import { readFileSync } from "node:fs";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { sendEmails } from "./example/usage.js";

/** Expects the README to hold the lines of `file` between `// <region>:start` and `:end`, unindented once. */
function expectReadmeShows(file: string, region: string): void {
  const source = readFileSync(new URL(file, import.meta.url), "utf8");
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const block = new RegExp(`// ${region}:start\\n([\\s\\S]*?)\\n\\s*// ${region}:end`).exec(source)?.[1];
  expect(block, region).toBeDefined();
  const lines = (block ?? "").split("\n").map((line) => line.replace(/^ {2}/, ""));
  expect(readme).toContain(lines.join("\n"));
}

describe("the README's usage example", () => {
  it("runs on postgres.js: the published email is sent and its row deleted", async () => {
    const url = await databaseUrl("postgres");
    const table = `rcj_readme_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    const sent: string[] = [];
    try {
      await sendEmails(url, table, async (to) => {
        sent.push(to);
      });
    } finally {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query(`DROP TABLE IF EXISTS "${table}"`);
      await admin.end();
    }
    expect(sent).toEqual(["ada@example.com"]);
  });

  it("is what the README shows, line for line", () => {
    expectReadmeShows("./example/usage.ts", "usage");
  });
});
