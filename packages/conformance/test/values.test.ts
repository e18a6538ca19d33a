import { describe, expect, it } from "vitest";
import {
  idKey,
  instant,
  isNull,
  patternBytes,
  sameBytes,
  toMillis,
  toNumber,
  uniqueTableName,
} from "../src/values.js";

describe("toNumber reads numbers as clients return them", () => {
  it.each([
    [3, 3],
    [3n, 3],
    ["42", 42],
    [" 7 ", 7],
  ])("reads %o as %d", (value, expected) => {
    expect(toNumber(value)).toBe(expected);
  });

  it.each([[null], [undefined], [""], ["abc"], [{}]])("reads %o as NaN", (value) => {
    expect(toNumber(value)).toBeNaN();
  });
});

describe("toMillis reads times as clients return them", () => {
  const at = Date.UTC(2026, 10, 30, 1, 2, 3, 456);

  it("reads a Date", () => {
    expect(toMillis(new Date(at))).toBe(at);
  });

  it("reads epoch milliseconds and epoch seconds", () => {
    expect(toMillis(at)).toBe(at);
    expect(toMillis(1_700_000_000)).toBe(1_700_000_000_000);
    expect(toMillis(BigInt(at))).toBe(at);
    expect(toMillis(String(at))).toBe(at);
  });

  it("reads ISO text with a zone, and text without one as UTC", () => {
    expect(toMillis("2026-11-30T01:02:03.456Z")).toBe(at);
    expect(toMillis("2026-11-30T02:02:03.456+01:00")).toBe(at);
    expect(toMillis("2026-11-30 01:02:03.456")).toBe(at);
  });

  it("reads anything else as NaN", () => {
    expect(toMillis(null)).toBeNaN();
    expect(toMillis("not a time")).toBeNaN();
  });
});

describe("instant makes times comparable with toEqual", () => {
  it("turns a Date into its epoch milliseconds and leaves other values alone", () => {
    expect(instant(new Date(5))).toBe(5);
    expect(instant("x")).toBe("x");
    expect(instant(null)).toBeNull();
  });
});

describe("isNull and idKey", () => {
  it("treat null and undefined as SQL NULL, and nothing else", () => {
    expect(isNull(null)).toBe(true);
    expect(isNull(undefined)).toBe(true);
    expect(isNull(0)).toBe(false);
    expect(isNull("")).toBe(false);
  });

  it("key ids of every client type the same way", () => {
    expect(idKey(7)).toBe("7");
    expect(idKey(7n)).toBe("7");
    expect(idKey("7")).toBe("7");
  });
});

describe("sameBytes compares byte arrays by content", () => {
  it("is true for equal bytes, false for a different length or byte", () => {
    expect(sameBytes(Uint8Array.from([1, 2]), Buffer.from([1, 2]))).toBe(true);
    expect(sameBytes(Uint8Array.from([1, 2]), Uint8Array.from([1]))).toBe(false);
    expect(sameBytes(Uint8Array.from([1, 2]), Uint8Array.from([1, 3]))).toBe(false);
    expect(sameBytes(new Uint8Array(0), new Uint8Array(0))).toBe(true);
  });
});

describe("patternBytes is deterministic and covers every byte value", () => {
  it("returns the same bytes for the same seed, and all 256 values in a long run", () => {
    const a = patternBytes(4096);
    expect(sameBytes(a, patternBytes(4096))).toBe(true);
    expect(sameBytes(a, patternBytes(4096, 2))).toBe(false);
    expect(new Set(a).size).toBe(256);
  });
});

describe("uniqueTableName names a test's table", () => {
  it("is rc_<suite>_<8 hex digits>, lower case, from the suite's name", () => {
    expect(uniqueTableName("Claims", () => 0.5)).toBe("rc_claims_88888888");
    expect(uniqueTableName("FIFO groups!")).toMatch(/^rc_fifo_groups_[0-9a-f]{8}$/);
  });

  it("stays a short plain identifier whatever the suite is called", () => {
    const name = uniqueTableName("a very long suite name with spaces and 'quotes'");
    expect(name).toMatch(/^[a-z0-9_]+$/);
    expect(name.length).toBeLessThanOrEqual(40);
  });

  it("starts with the harness's prefix, and refuses a prefix that is no plain identifier start", () => {
    expect(uniqueTableName("claims", () => 0.5, "mydb_ci_")).toBe("mydb_ci_claims_88888888");
    expect(() => uniqueTableName("claims", Math.random, "Bad-Prefix")).toThrow(/table prefix/);
    expect(() => uniqueTableName("claims", Math.random, "a_prefix_far_too_long_")).toThrow(/table prefix/);
  });

  it("differs between calls", () => {
    expect(uniqueTableName("x")).not.toBe(uniqueTableName("x"));
  });
});
