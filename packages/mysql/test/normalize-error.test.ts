import { BrokerError } from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { classifyError, normalizeError } from "../src/index.js";

describe("native errors map onto rowclaim codes and handling", () => {
  const cases: [
    what: string,
    error: object,
    code: string | undefined,
    retryable: boolean,
    lockNotAvailable: boolean,
    connectionLost: boolean,
  ][] = [
    ["1146 no such table", { errno: 1146, code: "ER_NO_SUCH_TABLE" }, "SCHEMA", false, false, false],
    ["1054 unknown column", { errno: 1054, code: "ER_BAD_FIELD_ERROR" }, "SCHEMA", false, false, false],
    ["1049 unknown database", { errno: 1049, code: "ER_BAD_DB_ERROR" }, "SCHEMA", false, false, false],
    ["1136 column count (dead-letter table)", { errno: 1136 }, "SCHEMA", false, false, false],
    ["1048 null into NOT NULL", { errno: 1048 }, "INVALID_ARGUMENT", false, false, false],
    ["1406 data too long", { errno: 1406 }, "INVALID_ARGUMENT", false, false, false],
    ["4025 MariaDB CHECK (json_valid)", { errno: 4025 }, "INVALID_ARGUMENT", false, false, false],
    ["3140 MySQL invalid JSON", { errno: 3140 }, "INVALID_ARGUMENT", false, false, false],
    ["1213 deadlock", { errno: 1213, code: "ER_LOCK_DEADLOCK" }, undefined, true, false, false],
    ["1205 lock wait timeout / MariaDB NOWAIT", { errno: 1205 }, undefined, true, true, false],
    ["3572 MySQL NOWAIT", { errno: 3572 }, undefined, false, true, false],
    ["1927 connection killed", { errno: 1927 }, undefined, false, false, true],
    ["2013 lost connection", { errno: 2013 }, undefined, false, false, true],
    [
      "PROTOCOL_CONNECTION_LOST",
      { code: "PROTOCOL_CONNECTION_LOST", fatal: true },
      undefined,
      false,
      false,
      true,
    ],
    ["ECONNRESET", { code: "ECONNRESET" }, undefined, false, false, true],
    ["1064 syntax error", { errno: 1064 }, undefined, false, false, false],
  ];

  it.each(cases)("%s", (_what, error, code, retryable, lockNotAvailable, connectionLost) => {
    expect(classifyError(error)).toEqual({ code, retryable, lockNotAvailable, connectionLost });
    const normalized = normalizeError(Object.assign(new Error("native"), error), {
      table: "jobs",
      operation: "test",
    });
    if (code === undefined) {
      expect(BrokerError.is(normalized)).toBe(false);
    } else {
      expect(BrokerError.is(normalized, code as "SCHEMA")).toBe(true);
      expect((normalized as BrokerError).cause).toBeInstanceOf(Error);
    }
  });

  it("values that are not errors pass through unclassified", () => {
    expect(classifyError(null)).toMatchObject({ code: undefined, retryable: false });
    expect(normalizeError("text", { table: "jobs", operation: "test" })).toBe("text");
  });
});
