import { describe, expect, test } from "vitest";
import { encodePayload } from "../src/driver-api.js";
import { BrokerError, defineTable } from "../src/index.js";

const table = defineTable({ name: "jobs", columns: { id: "id", payload: "payload" } });

function refusal(value: unknown): unknown {
  try {
    encodePayload(table, value);
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("a JSON payload JSON would change is refused with INVALID_ARGUMENT instead of stored changed", () => {
  test.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["NaN inside an object", { total: Number.NaN }],
    ["a Map", new Map([["a", 1]])],
    ["a Set inside an array", [new Set([1])]],
    ["a function property", { run: () => 1 }],
    ["an undefined property", { cc: undefined }],
    ["undefined inside an array", [1, undefined]],
    ["a bigint", { n: 10n }],
    ["a Date", { at: new Date(0) }],
    ["a class instance", { point: new (class Point {})() }],
  ])("%s", (_, value) => {
    const error = refusal(value);
    expect(BrokerError.is(error, "INVALID_ARGUMENT")).toBe(true);
  });

  test("the message names the path of the value JSON would change", () => {
    const error = refusal({ items: [{ sku: "a" }, { sku: "b", qty: Number.NaN }] });
    expect(BrokerError.is(error, "INVALID_ARGUMENT")).toBe(true);
    expect((error as Error).message).toContain("items[1].qty");
  });
});

describe("a JSON payload JSON keeps is encoded as before", () => {
  test.each([
    ["a string", "text"],
    ["a number", 1.5],
    ["null", null],
    ["an array", [1, "a", null, true]],
    ["a nested object", { a: { b: [1, { c: "d" }] } }],
    ["an object without prototype", Object.assign(Object.create(null) as object, { a: 1 })],
  ])("%s", (_, value) => {
    expect(JSON.parse(encodePayload(table, value) as string)).toEqual(value);
  });
});
