import { createBroker, silentLogger } from "@rowclaim/core";
import { type LeaseClaimer, leaseExpiry } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import { quote, readAll, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture(4);

describe.each(["DATETIME", "DATETIME(6)", "TIMESTAMP NULL"])(
  "lease tokens held by a %s column",
  (columnType) => {
    it("claim, extension within the same second, extension, settlement; a stale token fails with LEASE_LOST and changes nothing", async () => {
      const name = uniqueName("tok");
      const description = {
        name,
        columns: {
          id: "id",
          payload: "payload",
          attempt: "attempt",
          runAt: "run_at",
          lockedUntil: "locked_until",
        },
        lease: 1,
      };
      const table = await db.tables.create(
        description,
        `CREATE TABLE ${quote(name)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL, attempt INT NOT NULL DEFAULT 1, run_at ${columnType.replace("TIMESTAMP NULL", "DATETIME")} NULL, locked_until ${columnType} NULL) ENGINE=InnoDB`,
      );
      const broker = createBroker({ driver: db.driver, logger: silentLogger });
      await broker.publish(table, { n: 1 });
      const claimer = (await db.driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
      const now = new Date();
      const expiry = leaseExpiry(now, 1);
      const [claimed] = await claimer.claim({ limit: 1, now, expiry });
      if (claimed === undefined) throw new Error("nothing claimed");
      expect(claimed.row.attempt).toBe(1);
      expect(claimed.token.expiry).toEqual(expiry);
      expect((claimed.row.row.locked_until as Date).getTime()).toBe(expiry.getTime());

      // Extending to the expiry the row already holds matches the row (0 changed rows, 1 matched).
      const [same] = await claimer.extend([{ id: claimed.row.id, token: claimed.token }], expiry);
      expect(same?.expiry).toEqual(expiry);

      const later = new Date(expiry.getTime() + 5000);
      const [moved] = await claimer.extend([{ id: claimed.row.id, token: claimed.token }], later);
      expect(moved?.expiry).toEqual(later);

      // The old token no longer matches: extension reports it lost, settlement fails and changes nothing.
      const [lost] = await claimer.extend(
        [{ id: claimed.row.id, token: claimed.token }],
        new Date(later.getTime() + 1000),
      );
      expect(lost).toBeNull();
      await expect(claimer.settle(claimed.row.id, claimed.token, { kind: "delete" })).rejects.toMatchObject({
        code: "LEASE_LOST",
      });
      expect(await readAll(db.admin, table)).toHaveLength(1);

      if (moved === null || moved === undefined) throw new Error("extension lost");
      await claimer.settle(claimed.row.id, moved, { kind: "release", runAt: null });
      const [row] = await readAll(db.admin, table);
      expect(row?.locked_until).toBeNull();
      expect(row?.attempt).toBe(2);
      await claimer.close();
    });
  },
);

describe("a lease claim takes rows in claim order and counts the attempt", () => {
  it("several rows come back in claim order with attempt as it stood before", async () => {
    const table = await db.tables.create({
      name: uniqueName("order"),
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        priority: "priority",
        lockedUntil: "locked_until",
      },
    });
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    await broker.publishMany(table, [
      { payload: "c", priority: 3 },
      { payload: "a", priority: 1 },
      { payload: "b", priority: 2 },
    ]);
    const claimer = (await db.driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
    const now = new Date();
    const claimed = await claimer.claim({ limit: 5, now, expiry: leaseExpiry(now, 30) });
    expect(claimed.map((c) => c.row.payload)).toEqual(["a", "b", "c"]);
    expect(claimed.map((c) => c.row.attempt)).toEqual([1, 1, 1]);
    expect(await claimer.claim({ limit: 5, now, expiry: leaseExpiry(now, 30) })).toEqual([]);
    await claimer.close();
  });
});
