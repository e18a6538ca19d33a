// The control table's SQL on MySQL/MariaDB: the rate take (an upsert that hands its count back
// through LAST_INSERT_ID) never counts past the limit however many connections take at once,
// on the insert that creates the row as on the updates after it.
import { describe, expect, it } from "vitest";
import { newDriver, uniqueName } from "./support.js";

describe("the MySQL control table", () => {
  it("forty rate takes at once on five connections count exactly the limit; a give-back and an older window count as they should", async () => {
    const driver = await newDriver(5);
    try {
      const key = uniqueName("rc_ctl_rate");
      await driver.controls.ensure();
      const window = Math.floor(Date.now() / 60_000) * 60_000;
      const granted = await Promise.all(
        Array.from({ length: 40 }, () =>
          driver.controls.takeRate(key, "*", { window, intervalMs: 60_000, limit: 25, want: 3 }),
        ),
      );
      expect(granted.reduce((sum, n) => sum + n, 0)).toBe(25);
      expect(await driver.controls.read(key)).toEqual([
        {
          scope: "*",
          paused: false,
          rateWindow: window,
          rateCount: 25,
          rateLimit: 25,
          rateIntervalMs: 60_000,
        },
      ]);
      await driver.controls.returnRate(key, "*", window, 5);
      expect((await driver.controls.read(key))[0]?.rateCount).toBe(20);
      expect(
        await driver.controls.takeRate(key, "*", {
          window: window - 60_000,
          intervalMs: 60_000,
          limit: 25,
          want: 3,
        }),
      ).toBe(0);
      // The next window starts again from nothing.
      expect(
        await driver.controls.takeRate(key, "*", {
          window: window + 60_000,
          intervalMs: 60_000,
          limit: 25,
          want: 30,
        }),
      ).toBe(25);
      await driver.controls.setPaused(key, "group:a", true);
      expect((await driver.controls.read(key)).find((row) => row.scope === "group:a")?.paused).toBe(true);
    } finally {
      await driver.close();
    }
  });
});
