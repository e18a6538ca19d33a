import { describe, expect, it } from "vitest";
import {
  AuthenticationError,
  BatchRolledBackError,
  BrokerError,
  ClosedError,
  DeclarationError,
  InvalidArgumentError,
  LeaseLostError,
  SchemaError,
  ServerTooOldError,
  UnknownDatabaseError,
  UnsupportedFormError,
} from "../src/index.js";

describe("errors carry stable codes", () => {
  const cases: [BrokerError, string][] = [
    [new LeaseLostError("m"), "LEASE_LOST"],
    [new ServerTooOldError("m", { serverVersion: "10.5.1-MariaDB", floor: "10.6" }), "SERVER_TOO_OLD"],
    [new SchemaError("m", { column: "run_at", statement: "SELECT" }), "SCHEMA"],
    [new DeclarationError("m"), "DECLARATION"],
    [new UnsupportedFormError("m"), "UNSUPPORTED_FORM"],
    [new ClosedError("m"), "CLOSED"],
    [new BatchRolledBackError("m"), "BATCH_ROLLED_BACK"],
    [new InvalidArgumentError("m"), "INVALID_ARGUMENT"],
    [new AuthenticationError("m"), "AUTHENTICATION"],
    [new UnknownDatabaseError("m"), "UNKNOWN_DATABASE"],
  ];
  for (const [error, code] of cases) {
    it(`${error.name} has the code ${code} and is a BrokerError`, () => {
      expect(error.code).toBe(code);
      expect(error).toBeInstanceOf(BrokerError);
      expect(error).toBeInstanceOf(Error);
      expect(BrokerError.is(error)).toBe(true);
      expect(BrokerError.is(error, error.code)).toBe(true);
    });
  }
});

describe("BrokerError.is", () => {
  it("recognises an error from another copy of core by its brand", () => {
    const foreign = Object.assign(new Error("from a second copy"), {
      code: "LEASE_LOST",
      [Symbol.for("rowclaim.BrokerError")]: true,
    });
    expect(BrokerError.is(foreign, "LEASE_LOST")).toBe(true);
    expect(BrokerError.is(foreign, "CLOSED")).toBe(false);
  });
  it("does not take an unbranded error with a code for one", () => {
    expect(BrokerError.is(Object.assign(new Error("x"), { code: "LEASE_LOST" }))).toBe(false);
    expect(BrokerError.is(null)).toBe(false);
    expect(BrokerError.is("LEASE_LOST")).toBe(false);
  });
  it("keeps the native error as cause and the table", () => {
    const native = new Error("native");
    const error = new SchemaError("m", { cause: native, table: "jobs", column: "c" });
    expect(error.cause).toBe(native);
    expect(error.table).toBe("jobs");
    expect(error.column).toBe("c");
  });
});
