import { describe, expect, it } from "vitest";
import { DriverLifecycle, nativeErrorNormalizer } from "../src/driver-api.js";
import { BrokerError, defineTable } from "../src/index.js";

const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", lockedUntil: "locked_until" },
});

describe("DriverLifecycle", () => {
  it("refuses work with CLOSED after close() and runs the end once", async () => {
    const lifecycle = new DriverLifecycle("Test");
    let ends = 0;
    expect(() => lifecycle.assertOpen(table)).not.toThrow();
    const first = lifecycle.close(() => {
      ends += 1;
    });
    expect(lifecycle.closed).toBe(true);
    expect(
      lifecycle.close(() => {
        ends += 1;
      }),
    ).toBe(first);
    await first;
    expect(ends).toBe(1);
    expect(() => lifecycle.assertOpen(table)).toThrow(
      expect.objectContaining({ code: "CLOSED", table: "jobs" }),
    );
  });
});

describe("nativeErrorNormalizer", () => {
  const normalize = nativeErrorNormalizer<{ table: string; operation: string; statement?: string }>({
    codeOf: (error) =>
      BrokerError.is(error) ? undefined : (error as { kind?: "SCHEMA" | "CONSTRAINT" | "DEADLOCK" }).kind,
    where: (context) => `Table "${context.table}" (${context.operation})`,
    columnOf: () => "payload",
    sentences: {
      SCHEMA: (where, native) => `${where}: missing (${native})`,
      CONSTRAINT: (where, native) => `${where}: broken (${native})`,
    },
  });

  it.each([
    ["SCHEMA", "SCHEMA"],
    ["CONSTRAINT", "CONSTRAINT"],
  ])("wraps a native %s error in the class of its code, keeping it as cause", (kind, code) => {
    const native = Object.assign(new Error("native"), { kind });
    const wrapped = normalize(native, { table: "jobs", operation: "claim", statement: "SELECT 1" });
    expect(BrokerError.is(wrapped, code as "SCHEMA")).toBe(true);
    expect(wrapped).toMatchObject({ table: "jobs", cause: native });
  });

  it("a SchemaError keeps the statement and the column the driver reads", () => {
    const wrapped = normalize(Object.assign(new Error("x"), { kind: "SCHEMA" }), {
      table: "jobs",
      operation: "claim",
      statement: "SELECT 1",
    });
    expect(wrapped).toMatchObject({ code: "SCHEMA", statement: "SELECT 1", column: "payload" });
  });

  it("passes on an error without a code, or with a code the driver does not word", () => {
    const plain = new Error("plain");
    expect(normalize(plain, { table: "jobs", operation: "claim" })).toBe(plain);
    const unworded = Object.assign(new Error("d"), { kind: "DEADLOCK" });
    expect(normalize(unworded, { table: "jobs", operation: "claim" })).toBe(unworded);
  });
});
