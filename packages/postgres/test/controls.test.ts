// Pauses heard at once through NOTIFY (notify: true), and the control table's SQL: a rate take
// by many connections at once never counts past the limit.
import { createBroker, silentLogger } from "@rowclaim/core";
import { controlTableKey, scopeText } from "@rowclaim/core/driver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

describe("pauses on PostgreSQL", () => {
  it("with notify and watchControls, a pause and a resume written by another driver reach a subscription whose poll interval is ten minutes", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_ctl_notify")));
    const listening = db.driver({ notify: true, watchControls: true });
    const other = db.driver({});
    const broker = createBroker({ driver: listening, logger: silentLogger });
    let handled = 0;
    await other.controls.setPaused(controlTableKey(table), scopeText({ kind: "table" }), true);
    await broker.subscribe(
      table,
      () => {
        handled += 1;
      },
      { pollInterval: 600_000 },
    );
    // Published through the other driver: no in-process wake, no poll within the test's time.
    const publisher = createBroker({ driver: other, logger: silentLogger });
    await publisher.publishMany(table, [{ payload: 1 }, { payload: 2 }]);
    await other.controls.setPaused(controlTableKey(table), scopeText({ kind: "table" }), false);
    await waitFor(() => handled === 2, { what: "the rows to be handled after the NOTIFY of the resume" });
    expect((await publisher.controlState(table)).paused).toBe(false);
    await broker.close();
    await publisher.close();
  });

  it("forty rate takes at once on five connections count exactly the limit", async () => {
    const driver = db.driver({ max: 5 });
    const key = uniqueName("rc_ctl_rate");
    await driver.controls.ensure();
    const window = Math.floor(Date.now() / 60_000) * 60_000;
    const granted = await Promise.all(
      Array.from({ length: 40 }, () =>
        driver.controls.takeRate(key, "*", { window, intervalMs: 60_000, limit: 25, want: 3 }),
      ),
    );
    expect(granted.reduce((sum, n) => sum + n, 0)).toBe(25);
    const rows = await driver.controls.read(key);
    expect(rows).toEqual([
      { scope: "*", paused: false, rateWindow: window, rateCount: 25, rateLimit: 25, rateIntervalMs: 60_000 },
    ]);
    await driver.controls.returnRate(key, "*", window, 5);
    expect((await driver.controls.read(key))[0]?.rateCount).toBe(20);
    // A take for an older window (a host whose clock is behind) counts nothing.
    expect(
      await driver.controls.takeRate(key, "*", {
        window: window - 60_000,
        intervalMs: 60_000,
        limit: 25,
        want: 3,
      }),
    ).toBe(0);
    await driver.close();
  });
});
