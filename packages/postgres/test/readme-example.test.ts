import { readmeShows } from "@rowclaim/tooling/readme-snippet";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payOrder } from "./example/publish-in-transaction.js";
import { sendEmails } from "./example/usage.js";
import { TestDb, uniqueName } from "./helpers.js";

/** Expects the README to hold the region `region` of `file` verbatim. */
function expectReadmeShows(file: string, region: string): void {
  expect(readmeShows(new URL("../README.md", import.meta.url), new URL(file, import.meta.url), region)).toBe(
    true,
  );
}

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
    expectReadmeShows("./example/usage.ts", "usage");
  });
});

describe("the README's publishing-inside-your-transaction example", () => {
  it("runs on a pg.Pool of your own: the order is paid and its email row published, in one commit", async () => {
    const orders = uniqueName("rc_readme_orders");
    const emails = uniqueName("rc_readme_emails");
    try {
      await db.query(`CREATE TABLE "${orders}" (id int PRIMARY KEY, state text NOT NULL)`);
      await db.query(`INSERT INTO "${orders}" VALUES (7, 'open')`);
      await db.query(`CREATE TABLE "${emails}" (id bigserial PRIMARY KEY, payload jsonb NOT NULL)`);
      await payOrder(db.url, `"${orders}"`, emails, 7);
      expect(await db.query(`SELECT state FROM "${orders}"`)).toEqual([{ state: "paid" }]);
      expect(await db.query(`SELECT payload FROM "${emails}"`)).toEqual([
        { payload: { to: "ada@example.com" } },
      ]);
    } finally {
      await db.query(`DROP TABLE IF EXISTS "${orders}", "${emails}"`);
    }
  });

  it("is what the README shows, line for line", () => {
    expectReadmeShows("./example/publish-in-transaction.ts", "transactional-publish");
  });
});
