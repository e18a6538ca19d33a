import { describe, expect, it } from "vitest";
import { decodeHeaders, decodePayload, encodeHeaders, encodePayload } from "../src/driver-api.js";
import { BrokerError, defineTable } from "../src/index.js";

const table = (payloadType: "json" | "text" | "bytes") =>
  defineTable({ name: "jobs", columns: { id: "id", payload: "payload" }, payloadType });

function code(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return BrokerError.is(error) ? error.code : "not a BrokerError";
  }
  return undefined;
}

describe("payloads round-trip through their encoding", () => {
  it("json values survive encode and decode", () => {
    for (const value of [null, 0, "", "héllo 🌍", [1, { a: [true] }], { nested: { deep: "x".repeat(10) } }]) {
      expect(decodePayload(table("json"), encodePayload(table("json"), value))).toEqual(value);
    }
  });
  it("json decodes from UTF-8 bytes too", () => {
    expect(decodePayload(table("json"), new TextEncoder().encode('{"a":"ü"}'))).toEqual({ a: "ü" });
  });
  it("text and bytes pass through", () => {
    expect(encodePayload(table("text"), "")).toBe("");
    const bytes = new Uint8Array([0, 255, 1, 254]);
    expect(decodePayload(table("bytes"), encodePayload(table("bytes"), bytes))).toEqual(bytes);
  });
});

describe("a payload of the wrong type is refused with INVALID_ARGUMENT", () => {
  it("refuses a number for a text table, a string for a bytes table, undefined and BigInt for JSON", () => {
    expect(code(() => encodePayload(table("text"), 42))).toBe("INVALID_ARGUMENT");
    expect(code(() => encodePayload(table("bytes"), "abc"))).toBe("INVALID_ARGUMENT");
    expect(code(() => encodePayload(table("json"), undefined))).toBe("INVALID_ARGUMENT");
    expect(code(() => encodePayload(table("json"), 10n))).toBe("INVALID_ARGUMENT");
  });
});

describe("headers are a map of strings", () => {
  it("encode to JSON and decode back", () => {
    const headers = { trace: "abc", "content-type": "application/json" };
    expect(decodeHeaders(encodeHeaders(table("json"), headers))).toEqual(headers);
  });
  it("no headers encode to null and decode to an empty map", () => {
    expect(encodeHeaders(table("json"), undefined)).toBeNull();
    expect(decodeHeaders(null)).toEqual({});
  });
  it("a header value that is not a string is refused", () => {
    expect(code(() => encodeHeaders(table("json"), { n: 1 as unknown as string }))).toBe("INVALID_ARGUMENT");
  });
});
