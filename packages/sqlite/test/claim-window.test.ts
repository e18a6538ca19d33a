/**
 * How far an advisory claim looks: a first small window of rows, and a wider one when that
 * window holds too few distinct free keys, so one key's queue does not hide the keys behind it.
 */
import { createBroker, defineTable, silentLogger } from "@rowclaim/core";
import type { AdvisoryClaimer } from "@rowclaim/core/driver";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteDriver } from "../src/index.js";
import { claimColumns, tempDatabaseFile, uniqueName } from "./support.js";

const temp = tempDatabaseFile();
afterAll(() => {
  temp.remove();
});

describe("an advisory claim looks past one key's queue", () => {
  it("takes the first row of a key queued behind more rows of another key than its first window holds", async () => {
    const name = uniqueName("win");
    const table = defineTable({
      name,
      columns: { ...claimColumns },
      extraColumns: ["account"],
      advisoryLock: `${name}-{account}`,
    });
    const driver = createSqliteDriver({ filename: temp.file });
    driver.database.exec(driver.schemaSql(table));
    const broker = createBroker({ driver, logger: silentLogger });
    // Six rows of key a, then one of key b: a claim of two rows first looks at four rows (all a).
    await broker.publishMany(table, [
      ...Array.from({ length: 6 }, (_, n) => ({ payload: n, values: { account: "a" } })),
      { payload: 6, values: { account: "b" } },
    ]);
    const claimer = (await driver.open(table, { group: null, logger: silentLogger })) as AdvisoryClaimer;
    const claimed = await claimer.claim({ limit: 2, now: new Date() });
    expect(claimed.map((c) => [c.row.payload, c.token.key])).toEqual([
      [0, `${name}-a`],
      [6, `${name}-b`],
    ]);
    // With both keys held, nothing more is claimable.
    expect(await claimer.claim({ limit: 2, now: new Date() })).toEqual([]);
    for (const { row, token } of claimed) await claimer.settle(token, row, { kind: "delete" });
    const next = await claimer.claim({ limit: 2, now: new Date() });
    expect(next.map((c) => c.row.payload)).toEqual([1]);
    for (const { token } of next) await claimer.release(token);
    await claimer.close();
    await broker.close();
    await driver.close();
  });
});
