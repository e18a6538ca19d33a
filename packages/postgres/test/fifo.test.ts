import { createBroker, silentLogger } from "@rowclaim/core";
import type { Claimer } from "@rowclaim/core/driver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

/** Claims with `claimer` as of `now`; returns the payloads it took and gives the rows back. */
async function claimAt(claimer: Claimer, now: Date): Promise<unknown[]> {
  switch (claimer.form) {
    case "rowLock": {
      const batch = await claimer.claim({ limit: 5, now });
      if (batch === null) return [];
      await claimer.release(batch.token);
      return batch.rows.map((row) => row.payload);
    }
    case "lease": {
      const expiry = new Date(Math.ceil(now.getTime() / 1000) * 1000 + 1000);
      const claimed = await claimer.claim({ limit: 5, now, expiry });
      for (const { row, token } of claimed)
        await claimer.settle(row.id, token, { kind: "release", runAt: null });
      return claimed.map(({ row }) => row.payload);
    }
    case "advisory":
      throw new Error("FIFO is not offered in the advisory form");
  }
}

describe("the head of a FIFO group", () => {
  it.each(["rowLock", "lease"] as const)(
    "in the %s form, a head that is not due yet holds back the rest of its group",
    async (form) => {
      const table = await db.create(describeTable(form, uniqueName(`rc_fifo_head_${form}`), { fifo: true }));
      const broker = createBroker({ driver: db.driver(), logger: silentLogger });
      const now = new Date();
      await broker.publish(table, "head", {
        group: "g",
        priority: 0,
        runAt: new Date(now.getTime() + 60_000),
      });
      await broker.publish(table, "behind", {
        group: "g",
        priority: 1,
        runAt: new Date(now.getTime() - 60_000),
      });
      await broker.publish(table, "other group", {
        group: "h",
        priority: 1,
        runAt: new Date(now.getTime() - 60_000),
      });
      const probe = db.driver();
      const claimer = await probe.open(table, { group: "g", logger: silentLogger });
      expect(await claimAt(claimer, now)).toEqual([]);
      expect(await claimAt(claimer, new Date(now.getTime() + 61_000))).toEqual(["head"]);
      const other = await probe.open(table, { group: "h", logger: silentLogger });
      expect(await claimAt(other, now)).toEqual(["other group"]);
      await Promise.all([claimer.close(), other.close(), broker.close()]);
      await probe.close();
    },
  );
});
