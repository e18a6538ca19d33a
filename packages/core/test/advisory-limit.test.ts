// Per-key limits in core: `advisoryLock: { key, limit }` is parsed and checked by defineTable, the
// slots' lock keys are rendered in one place, and a driver that does not declare
// `capabilities.advisoryLimit` is refused at subscribe before it opens anything. The limit itself
// is proven against the real databases by the conformance suite's "per-key limits" sub-suite.
import { describe, expect, it } from "vitest";
import { advisorySlotKeys } from "../src/advisory-limit.js";
import { advisorySlotKey, defineDriver, driverCapabilities, freeAdvisorySlots } from "../src/driver-api.js";
import {
  ack,
  BrokerError,
  createBroker,
  defineTable,
  MAX_ADVISORY_LIMIT,
  silentLogger,
  type TableDescription,
} from "../src/index.js";

const base = { name: "jobs", columns: { id: "id", payload: "payload" }, extraColumns: ["account"] } as const;

function refusal(description: unknown): BrokerError {
  try {
    defineTable(description as TableDescription);
  } catch (error) {
    if (BrokerError.is(error)) return error;
    throw error;
  }
  throw new Error("defineTable accepted the description");
}

describe("advisoryLock takes a per-key limit", () => {
  it("a string key has a limit of 1, and so has a key object without a limit", () => {
    expect(defineTable({ ...base, advisoryLock: "jobs-{account}" }).advisoryLimit).toBe(1);
    expect(defineTable({ ...base, advisoryLock: { key: "jobs-{account}" } }).advisoryLimit).toBe(1);
  });
  it("a key object with a limit parses the key and keeps the limit", () => {
    const table = defineTable({ ...base, advisoryLock: { key: "jobs-{account}", limit: 3 } });
    expect(table.form).toBe("advisory");
    expect(table.advisoryLimit).toBe(3);
    expect(table.advisoryKey?.parts).toEqual([{ literal: "jobs-" }, { column: "account" }]);
  });
  it("tables of other forms have a limit of 1", () => {
    expect(defineTable(base).advisoryLimit).toBe(1);
  });
  it.each([
    ["a limit of 0", 0],
    ["a negative limit", -2],
    ["a fractional limit", 2.5],
    ["a limit past the largest", MAX_ADVISORY_LIMIT + 1],
    ["a limit given as a string", "3"],
    ["NaN", Number.NaN],
  ])("%s is refused with DECLARATION naming advisoryLock.limit", (_title, limit) => {
    const error = refusal({ ...base, advisoryLock: { key: "jobs-{account}", limit } });
    expect(error.code).toBe("DECLARATION");
    expect(error.message).toContain("advisoryLock.limit");
  });
  it("an unknown key of the object is refused with DECLARATION, the nearest key suggested", () => {
    const error = refusal({ ...base, advisoryLock: { key: "jobs-{account}", limt: 3 } });
    expect(error.code).toBe("DECLARATION");
    expect(error.message).toContain("advisoryLock.limt");
    expect(error.message).toContain("`limit`");
  });
  it("an object without a key, or with a key naming no column, is refused with DECLARATION", () => {
    expect(refusal({ ...base, advisoryLock: { limit: 3 } }).code).toBe("DECLARATION");
    expect(refusal({ ...base, advisoryLock: { key: "jobs-{nowhere}", limit: 3 } }).code).toBe("DECLARATION");
  });
  it("fifo beside a limited key is refused as beside any advisory key", () => {
    const error = refusal({
      ...base,
      columns: { ...base.columns, group: "queue" },
      advisoryLock: { key: "{queue}", limit: 2 },
      fifo: true,
    });
    expect(error.code).toBe("DECLARATION");
  });
});

describe("slot lock keys", () => {
  it("a limit of 1 locks the rendered key itself", () => {
    expect(advisorySlotKey("jobs-7", 1, 1)).toBe("jobs-7");
    expect(advisorySlotKeys("jobs-7", 1)).toEqual(["jobs-7"]);
  });
  it("a limit of n locks the rendered key with each slot's number after a #", () => {
    expect(advisorySlotKeys("jobs-7", 3)).toEqual(["jobs-7#1", "jobs-7#2", "jobs-7#3"]);
  });
  it("free slots are the slots nobody holds, slot 1 first", () => {
    const held = new Set(["jobs-7#1", "jobs-7#3"]);
    expect(freeAdvisorySlots("jobs-7", 4, (key) => held.has(key))).toEqual(["jobs-7#2", "jobs-7#4"]);
  });
});

describe("capabilities.advisoryLimit", () => {
  const state = { opened: 0 };
  const driver = defineDriver({
    name: "third-party",
    dialect: "third-party",
    capabilities: { forms: ["advisory"] },
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

  it("defaults to false", () => {
    expect(driverCapabilities({ forms: ["advisory"] }).advisoryLimit).toBe(false);
  });
  it("a table with a limit above 1 is refused at subscribe with UNSUPPORTED_FORM on a driver without it", async () => {
    const broker = createBroker({ driver, logger: silentLogger });
    const table = defineTable({ ...base, advisoryLock: { key: "jobs-{account}", limit: 2 } });
    const error = await broker.subscribe(table, () => ack()).catch((caught: unknown) => caught);
    expect(BrokerError.is(error, "UNSUPPORTED_FORM")).toBe(true);
    expect((error as Error).message).toContain("advisoryLock.limit");
    expect(state.opened).toBe(0);
    await broker.close();
  });
});
