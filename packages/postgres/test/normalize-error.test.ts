import { BrokerError, type BrokerErrorCode, ConstraintError } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { codeForError, isClaimConflict, isConnectionLost, normalizeError } from "../src/index.js";

function pgError(code: string, message = "native"): Error {
  return Object.assign(new Error(message), { code });
}

const context = { table: "jobs", operation: "lease claim", statement: "SELECT 1" };

/** What each SQLSTATE the tables below use means, for the test names. */
const sqlStateNames: Readonly<Record<string, string>> = {
  "42P01": "undefined table",
  "42703": "undefined column",
  "3F000": "invalid schema name",
  "42804": "datatype mismatch",
  "42883": "undefined function",
  "42501": "insufficient privilege",
  "22P02": "invalid text representation",
  "22P05": "untranslatable character",
  "22001": "string data right truncation",
  "23502": "not-null violation",
  "23505": "unique violation",
  "23514": "check violation",
  "0A000": "feature not supported",
  "40001": "serialization failure",
  "40P01": "deadlock detected",
  "55P03": "lock not available",
  "57P01": "admin shutdown",
  "57P02": "crash shutdown",
  "57P03": "cannot connect now",
  "23503": "foreign key violation",
  "22003": "numeric value out of range",
  "22008": "datetime field overflow",
  "08006": "connection failure",
  XX000: "internal error",
  "28P01": "invalid password",
  "28000": "invalid authorization specification",
  "3D000": "invalid catalog name",
};

/** `SQLSTATE 42P01 (undefined table)`. */
function sqlState(state: string): string {
  return `SQLSTATE ${state} (${sqlStateNames[state] ?? "unnamed"})`;
}

describe("normalizing PostgreSQL errors by SQLSTATE", () => {
  const cases: [state: string, code: BrokerErrorCode | undefined][] = [
    ["42P01", "SCHEMA"],
    ["42703", "SCHEMA"],
    ["3F000", "SCHEMA"],
    ["42804", "SCHEMA"],
    ["42883", "SCHEMA"],
    ["42501", "SCHEMA"],
    ["22P02", "INVALID_ARGUMENT"],
    ["22P05", "INVALID_ARGUMENT"],
    ["22001", "INVALID_ARGUMENT"],
    ["22003", "INVALID_ARGUMENT"],
    ["22008", "INVALID_ARGUMENT"],
    ["23502", "CONSTRAINT"],
    ["23503", "CONSTRAINT"],
    ["23505", "CONSTRAINT"],
    ["23514", "CONSTRAINT"],
    ["0A000", "SCHEMA"],
    ["40001", undefined],
    ["57P01", "CONNECTION_LOST"],
    ["57P02", "CONNECTION_LOST"],
    ["57P03", "CONNECTION_LOST"],
    ["08006", "CONNECTION_LOST"],
    ["XX000", undefined],
    ["28P01", "AUTHENTICATION"],
    ["28000", "AUTHENTICATION"],
    ["3D000", "UNKNOWN_DATABASE"],
  ];
  for (const [state, code] of cases) {
    const name =
      code === undefined
        ? `an error with ${sqlState(state)} gets no code and is returned as it is`
        : `an error with ${sqlState(state)} becomes ${code}, with the native error as cause`;
    it(name, () => {
      expect(codeForError(pgError(state))).toBe(code);
      const normalized = normalizeError(pgError(state), context);
      if (code === undefined) {
        expect(BrokerError.is(normalized)).toBe(false);
      } else {
        expect(BrokerError.is(normalized, code)).toBe(true);
        expect((normalized as Error).cause).toMatchObject({ code: state });
      }
    });
  }

  it("an error without a SQLSTATE and no known message is returned as it is", () => {
    const error = new Error("boom");
    expect(normalizeError(error, context)).toBe(error);
  });

  it("a rowclaim error is returned as it is", () => {
    const error = new ConstraintError("already normalized");
    expect(normalizeError(error, context)).toBe(error);
  });

  const clientCases: [what: string, error: Error, code: BrokerErrorCode][] = [
    [
      "a socket error ECONNREFUSED",
      Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
      "CONNECTION_LOST",
    ],
    [
      "a socket error ECONNRESET",
      Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }),
      "CONNECTION_LOST",
    ],
    [
      "a host name that does not resolve (ENOTFOUND)",
      Object.assign(new Error("getaddrinfo ENOTFOUND db.invalid"), { code: "ENOTFOUND" }),
      "CONNECTION_LOST",
    ],
    [
      'pg\'s "Connection terminated unexpectedly"',
      new Error("Connection terminated unexpectedly"),
      "CONNECTION_LOST",
    ],
    [
      'pg\'s "Client has encountered a connection error and is not queryable"',
      new Error("Client has encountered a connection error and is not queryable"),
      "CONNECTION_LOST",
    ],
    [
      'pg-pool\'s "timeout exceeded when trying to connect"',
      new Error("timeout exceeded when trying to connect"),
      "CONNECTION_TIMEOUT",
    ],
  ];
  for (const [what, error, code] of clientCases) {
    it(`${what} becomes ${code}, with the native error as cause`, () => {
      expect(codeForError(error)).toBe(code);
      const normalized = normalizeError(error, context);
      expect(BrokerError.is(normalized, code)).toBe(true);
      expect((normalized as Error).cause).toBe(error);
    });
  }

  it("a SCHEMA error names the column the server names", () => {
    const normalized = normalizeError(pgError("42703", 'column "run_at" does not exist'), context);
    expect(normalized).toMatchObject({
      code: "SCHEMA",
      column: "run_at",
      statement: "SELECT 1",
      table: "jobs",
    });
  });
});

describe("telling a lost connection and a lost race", () => {
  const connectionCases: [what: string, error: Error, lost: boolean][] = [
    [`an error with ${sqlState("57P01")}`, pgError("57P01"), true],
    [`an error with ${sqlState("08006")}`, pgError("08006"), true],
    ["a socket error ECONNRESET", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), true],
    ['pg\'s "Connection terminated unexpectedly"', new Error("Connection terminated unexpectedly"), true],
    [
      'pg\'s "Client was closed and is not queryable"',
      new Error("Client was closed and is not queryable"),
      true,
    ],
    [`an error with ${sqlState("42P01")}`, pgError("42P01"), false],
    [`an error with ${sqlState("40001")}`, pgError("40001"), false],
    ["an error with no SQLSTATE and no known message", new Error("anything else"), false],
  ];
  for (const [what, error, lost] of connectionCases) {
    it(`${what} ${lost ? "is" : "is not"} a lost connection`, () => {
      expect(isConnectionLost(error)).toBe(lost);
    });
  }

  const conflictCases: [state: string, conflict: boolean][] = [
    ["40001", true],
    ["40P01", true],
    ["55P03", true],
    ["42P01", false],
  ];
  for (const [state, conflict] of conflictCases) {
    it(`an error with ${sqlState(state)} ${conflict ? "is" : "is not"} a claim conflict (a lost race)`, () => {
      expect(isClaimConflict(pgError(state))).toBe(conflict);
    });
  }
});
