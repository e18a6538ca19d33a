import { BrokerError } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { codeForError, isClaimConflict, isConnectionLost, normalizeError } from "../src/index.js";

function pgError(code: string, message = "native"): Error {
  return Object.assign(new Error(message), { code });
}

const context = { table: "jobs", form: "lease", statement: "lease claim" };

describe("normalizing PostgreSQL errors by SQLSTATE", () => {
  it.each([
    ["42P01", "SCHEMA"],
    ["42703", "SCHEMA"],
    ["3F000", "SCHEMA"],
    ["42804", "SCHEMA"],
    ["42883", "SCHEMA"],
    ["42501", "SCHEMA"],
    ["22P02", "INVALID_ARGUMENT"],
    ["22P05", "INVALID_ARGUMENT"],
    ["22001", "INVALID_ARGUMENT"],
    ["23502", "INVALID_ARGUMENT"],
    ["23505", "INVALID_ARGUMENT"],
    ["23514", "INVALID_ARGUMENT"],
    ["0A000", "SCHEMA"],
    ["40001", undefined],
    ["57P01", undefined],
    ["XX000", undefined],
  ] as const)("%s maps to %s", (state, code) => {
    expect(codeForError(pgError(state))).toBe(code);
    const normalized = normalizeError(pgError(state), context);
    if (code === undefined) {
      expect(BrokerError.is(normalized)).toBe(false);
    } else {
      expect(BrokerError.is(normalized, code)).toBe(true);
      expect((normalized as Error).cause).toMatchObject({ code: state });
    }
  });

  it("an error without a SQLSTATE is returned as it is", () => {
    const error = new Error("boom");
    expect(normalizeError(error, context)).toBe(error);
    expect(codeForError({ code: "ECONNRESET" })).toBeUndefined();
  });

  it("a SCHEMA error names the column the server names", () => {
    const normalized = normalizeError(pgError("42703", 'column "run_at" does not exist'), context);
    expect(normalized).toMatchObject({
      code: "SCHEMA",
      column: "run_at",
      statement: "lease claim",
      table: "jobs",
    });
  });
});

describe("telling a lost connection and a lost race", () => {
  it.each([
    [pgError("57P01"), true],
    [pgError("08006"), true],
    [Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), true],
    [new Error("Connection terminated unexpectedly"), true],
    [new Error("Client was closed and is not queryable"), true],
    [pgError("42P01"), false],
    [pgError("40001"), false],
    [new Error("anything else"), false],
  ] as const)("%#: connection lost: %j", (error, lost) => {
    expect(isConnectionLost(error)).toBe(lost);
  });

  it.each([
    ["40001", true],
    ["40P01", true],
    ["55P03", true],
    ["42P01", false],
  ] as const)("%s is a claim conflict: %j", (state, conflict) => {
    expect(isClaimConflict(pgError(state))).toBe(conflict);
  });
});
