/**
 * The driver's declared capabilities, read once per harness from a driver made for the purpose.
 *
 * @module
 */
import type { DriverCapabilities } from "@rowclaim/core/driver";
import type { ConformanceHarness } from "./harness.js";

const cache = new WeakMap<ConformanceHarness, Promise<DriverCapabilities>>();

/** The capabilities the harness's driver declares (the driver made to read them is closed at once). */
export function capabilitiesOf(harness: ConformanceHarness): Promise<DriverCapabilities> {
  let pending = cache.get(harness);
  if (pending === undefined) {
    pending = (async () => {
      const driver = await harness.createDriver();
      try {
        return driver.capabilities;
      } finally {
        await driver.close();
      }
    })();
    cache.set(harness, pending);
    pending.catch(() => cache.delete(harness));
  }
  return pending;
}
