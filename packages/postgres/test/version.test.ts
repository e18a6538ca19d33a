import { BrokerError, defineTable, type TableDefinition } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import {
  assertServerVersion,
  formatVersionNum,
  parseServerVersionNum,
  versionFloorFor,
} from "../src/index.js";

const rowLock = defineTable({ name: "t", columns: { id: "id", payload: "p" } });
const lease = defineTable({ name: "t", columns: { id: "id", payload: "p", lockedUntil: "l" } });
const advisory = defineTable({ name: "t", columns: { id: "id", payload: "p" }, advisoryLock: "t-{id}" });
const fifoLease = defineTable({
  name: "t",
  columns: { id: "id", payload: "p", group: "g", lockedUntil: "l" },
  fifo: true,
});
const fifoRowLock = defineTable({ name: "t", columns: { id: "id", payload: "p", group: "g" }, fifo: true });

describe("reading server_version_num", () => {
  it.each([
    ["150020", 150020],
    [" 110000 ", 110000],
    [90624, 90624],
  ] as const)("parses %j as %i", (input, expected) => {
    expect(parseServerVersionNum(input)).toBe(expected);
  });

  const refused: [what: string, input: unknown][] = [
    ["an empty string", ""],
    ['a version in dotted form ("15.2")', "15.2"],
    ['text that is not a number ("abc")', "abc"],
    ["null", null],
    ["undefined", undefined],
    ["a negative number", -1],
    ['zero ("0")', "0"],
  ];
  for (const [what, input] of refused) {
    it(`refuses ${what}`, () => {
      expect(() => parseServerVersionNum(input)).toThrow();
    });
  }

  it.each([
    [150020, "15.20"],
    [110000, "11.0"],
    [90624, "9.6.24"],
    [100005, "10.5"],
  ] as const)("formats %i as %s", (num, text) => {
    expect(formatVersionNum(num)).toBe(text);
  });
});

describe("the version floor", () => {
  it("the advisory form and FIFO groups need PostgreSQL 11; plain row lock and lease take any version", () => {
    expect(versionFloorFor(advisory)).toBe(110000);
    expect(versionFloorFor(fifoLease)).toBe(110000);
    expect(versionFloorFor(fifoRowLock)).toBe(110000);
    expect(versionFloorFor(rowLock)).toBeNull();
    expect(versionFloorFor(lease)).toBeNull();
  });

  const cases: [table: TableDefinition, what: string, num: number, text: string, refused: boolean][] = [
    [advisory, "the advisory form", 100023, "10.23", true],
    [advisory, "the advisory form", 110000, "11.0", false],
    [advisory, "the advisory form", 150020, "15.20", false],
    [fifoLease, "a FIFO lease table", 90624, "9.6.24", true],
    [fifoRowLock, "a FIFO row lock table", 109999, "10.99", true],
    [rowLock, "a plain row lock table", 90624, "9.6.24", false],
    [lease, "a plain lease table", 90500, "9.5", false],
  ];
  for (const [table, what, num, text, refused] of cases) {
    const verdict = refused
      ? `refused for ${what} with SERVER_TOO_OLD naming the floor 11.0`
      : `accepted for ${what}`;
    it(`PostgreSQL ${text} (${num}) is ${verdict}`, () => {
      let thrown: unknown;
      try {
        assertServerVersion(table, num, text);
      } catch (error) {
        thrown = error;
      }
      expect(BrokerError.is(thrown, "SERVER_TOO_OLD")).toBe(refused);
      if (refused) expect(thrown).toMatchObject({ serverVersion: text, floor: "11.0" });
    });
  }
});
