// Transactional handlers in core: a driver declares the forms in which it offers them
// (capabilities.transactionalHandlers, none unless it says so), and a subscription that asks for
// them on a driver that does not offer them is refused at subscribe, before the driver opens
// anything. The behaviour itself is proven against the real databases by the conformance suite's
// "transactional handlers" sub-suite.
import { describe, expect, it } from "vitest";
import { defineDriver, driverCapabilities } from "../src/driver-api.js";
import { ack, BrokerError, createBroker, type Driver, defineTable, silentLogger } from "../src/index.js";

/** A third-party driver that offers `forms` and, in `transactional`, transactional handlers; it must never be opened. */
function thirdPartyDriver(transactional?: readonly ("rowLock" | "lease" | "advisory")[]): Driver & {
  readonly state: { opened: number };
} {
  const state = { opened: 0 };
  const driver = defineDriver({
    name: "third-party",
    dialect: "third-party",
    capabilities: {
      forms: ["rowLock", "lease", "advisory"],
      ...(transactional === undefined ? {} : { transactionalHandlers: transactional }),
    },
    async open() {
      state.opened += 1;
      throw new Error("the refusal must come before the driver opens anything");
    },
    async publish() {
      return [];
    },
    schemaSql: () => "",
    async close() {},
  });
  return { ...driver, state };
}

const rowLockTable = defineTable({ name: "jobs", columns: { id: "id", payload: "payload" } });
const leaseTable = defineTable({
  name: "leased",
  columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
});

describe("capabilities.transactionalHandlers defaults to none", () => {
  it("driverCapabilities and defineDriver fill transactionalHandlers with an empty list when a driver does not name it", () => {
    expect(driverCapabilities({ forms: ["lease"] }).transactionalHandlers).toEqual([]);
    expect(thirdPartyDriver().capabilities.transactionalHandlers).toEqual([]);
    expect(thirdPartyDriver(["lease"]).capabilities.transactionalHandlers).toEqual(["lease"]);
  });
});

describe("a subscription asking for transactional handlers is refused at subscribe where the driver does not offer them", () => {
  it("subscribe with transactional: true on a driver offering none fails with UNSUPPORTED_FORM before the driver opens", async () => {
    const driver = thirdPartyDriver();
    const broker = createBroker({ driver, logger: silentLogger });
    const error = await broker
      .subscribe(rowLockTable, () => ack(), { transactional: true })
      .catch((e: unknown) => e);
    expect(BrokerError.is(error, "UNSUPPORTED_FORM")).toBe(true);
    expect(driver.state.opened).toBe(0);
    await broker.close();
  });

  it("subscribe with transactional: true is refused in a form the driver does not list, and reaches the driver in one it lists", async () => {
    const driver = thirdPartyDriver(["lease"]);
    const broker = createBroker({ driver, logger: silentLogger });
    const refused = await broker
      .subscribe(rowLockTable, () => ack(), { transactional: true })
      .catch((e: unknown) => e);
    expect(BrokerError.is(refused, "UNSUPPORTED_FORM")).toBe(true);
    expect(driver.state.opened).toBe(0);
    // The lease form is offered: the subscription goes on to open the driver (which this one refuses).
    const opened = await broker
      .subscribe(leaseTable, () => ack(), { transactional: true })
      .catch((e: unknown) => e);
    expect(BrokerError.is(opened)).toBe(false);
    expect(driver.state.opened).toBe(1);
    await broker.close();
  });

  it("subscribe without transactional reaches the driver whatever it offers", async () => {
    const driver = thirdPartyDriver();
    const broker = createBroker({ driver, logger: silentLogger });
    await broker.subscribe(rowLockTable, () => ack()).catch(() => undefined);
    expect(driver.state.opened).toBe(1);
    await broker.close();
  });

  it("a driver that lists the form but opens a claimer without transaction() is refused with UNSUPPORTED_FORM, and the claimer closed", async () => {
    let closed = 0;
    const driver = defineDriver({
      name: "listing-only",
      dialect: "listing-only",
      capabilities: { forms: ["lease"], transactionalHandlers: ["lease"] },
      async open() {
        return {
          form: "lease" as const,
          async claim() {
            return [];
          },
          async extend() {
            return [];
          },
          async settle() {},
          async close() {
            closed += 1;
          },
        };
      },
      async publish() {
        return [];
      },
      schemaSql: () => "",
      async close() {},
    });
    const broker = createBroker({ driver, logger: silentLogger });
    const error = await broker
      .subscribe(leaseTable, () => ack(), { transactional: true })
      .catch((e: unknown) => e);
    expect(BrokerError.is(error, "UNSUPPORTED_FORM")).toBe(true);
    expect(closed).toBe(1);
    await broker.close();
  });
});
