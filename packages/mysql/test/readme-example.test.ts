import { readmeShows } from "@rowclaim/tooling/readme-snippet";
import { createPool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { readmeExample } from "./readme-example.js";
import { mysqlUrl, uniqueName } from "./support.js";

describe("the README's usage example", () => {
  it("runs as written and the README shows it verbatim", async () => {
    const url = await mysqlUrl();
    const name = uniqueName("readme");
    try {
      expect(await readmeExample(url, name)).toEqual([{ to: "a@example.com" }]);
    } finally {
      const pool = createPool({ uri: url });
      await pool.query(`DROP TABLE IF EXISTS \`${name}\``);
      await pool.end();
    }
    expect(
      readmeShows(
        new URL("../README.md", import.meta.url),
        new URL("./readme-example.ts", import.meta.url),
        "usage",
      ),
    ).toBe(true);
  });
});
