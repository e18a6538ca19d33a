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
    ["errno 1146 (no such table)", { errno: 1146, code: "ER_NO_SUCH_TABLE" }, "SCHEMA", false, false, false],
    [
      "errno 1054 (unknown column)",
      { errno: 1054, code: "ER_BAD_FIELD_ERROR" },
      "SCHEMA",
      false,
      false,
      false,
    ],
    [
      "errno 1049 (unknown database)",
      { errno: 1049, code: "ER_BAD_DB_ERROR" },
      "UNKNOWN_DATABASE",
      false,
      false,
      false,
    ],
    [
      "errno 1045 (access denied: user or password)",
      { errno: 1045, code: "ER_ACCESS_DENIED_ERROR", fatal: true },
      "AUTHENTICATION",
      false,
      false,
      false,
    ],
    [
      "errno 1044 (access denied to the database)",
      { errno: 1044, code: "ER_DBACCESS_DENIED_ERROR", fatal: true },
      "AUTHENTICATION",
      false,
      false,
      false,
    ],
    ["errno 1698 (access denied without a password)", { errno: 1698 }, "AUTHENTICATION", false, false, false],
    ["errno 1136 (column count, a dead-letter table)", { errno: 1136 }, "SCHEMA", false, false, false],
    ["errno 1048 (NULL into NOT NULL)", { errno: 1048 }, "CONSTRAINT", false, false, false],
    [
      "errno 1062 (duplicate entry)",
      { errno: 1062, code: "ER_DUP_ENTRY" },
      "CONSTRAINT",
      false,
      false,
      false,
    ],
    ["errno 1451 (row is referenced)", { errno: 1451 }, "CONSTRAINT", false, false, false],
    ["errno 1452 (no referenced row)", { errno: 1452 }, "CONSTRAINT", false, false, false],
    ["errno 3819 (MySQL CHECK constraint)", { errno: 3819 }, "CONSTRAINT", false, false, false],
    ["errno 1264 (out of range)", { errno: 1264 }, "INVALID_ARGUMENT", false, false, false],
    ["errno 1292 (incorrect datetime value)", { errno: 1292 }, "INVALID_ARGUMENT", false, false, false],
    [
      "errno 1153 (packet over max_allowed_packet)",
      { errno: 1153, code: "ER_NET_PACKET_TOO_LARGE" },
      "INVALID_ARGUMENT",
      false,
      false,
      true,
    ],
    ["errno 1406 (data too long)", { errno: 1406 }, "INVALID_ARGUMENT", false, false, false],
    ["errno 4025 (MariaDB CHECK json_valid)", { errno: 4025 }, "INVALID_ARGUMENT", false, false, false],
    ["errno 3140 (MySQL invalid JSON)", { errno: 3140 }, "INVALID_ARGUMENT", false, false, false],
    ["errno 1213 (deadlock)", { errno: 1213, code: "ER_LOCK_DEADLOCK" }, "DEADLOCK", true, false, false],
    [
      "errno 1205 (lock wait timeout, MariaDB NOWAIT)",
      { errno: 1205, code: "ER_LOCK_WAIT_TIMEOUT" },
      "LOCK_TIMEOUT",
      true,
      true,
      false,
    ],
    ["errno 3572 (MySQL NOWAIT)", { errno: 3572 }, undefined, false, true, false],
    ["errno 1927 (connection killed)", { errno: 1927 }, "CONNECTION_LOST", false, false, true],
    ["errno 1053 (server shutdown)", { errno: 1053 }, "CONNECTION_LOST", false, false, true],
    ["errno 2013 (lost connection)", { errno: 2013 }, "CONNECTION_LOST", false, false, true],
    [
      "mysql2's PROTOCOL_CONNECTION_LOST",
      { code: "PROTOCOL_CONNECTION_LOST", fatal: true },
      "CONNECTION_LOST",
      false,
      false,
      true,
    ],
    [
      "mysql2's \"Can't add new command when connection is in closed state\"",
      { fatal: true, message: "Can't add new command when connection is in closed state" },
      "CONNECTION_LOST",
      false,
      false,
      true,
    ],
    ["a socket error ECONNRESET", { code: "ECONNRESET" }, "CONNECTION_LOST", false, false, true],
    ["a socket error ECONNREFUSED", { code: "ECONNREFUSED" }, "CONNECTION_LOST", false, false, true],
    ["errno 1064 (syntax error)", { errno: 1064 }, undefined, false, false, false],
  ];

  for (const [what, error, code, retryable, lockNotAvailable, connectionLost] of cases) {
    const handling = [
      code === undefined ? "gets no code" : `becomes ${code}`,
      retryable ? "is retryable" : "is not retryable",
      ...(lockNotAvailable ? ["means the lock is not available"] : []),
      ...(connectionLost ? ["means the connection is lost"] : []),
    ];
    it(`${what} ${handling.slice(0, -1).join(", ")} and ${handling.at(-1)}`, () => {
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
  }

  it.each([
    ["DEADLOCK", 1213],
    ["LOCK_TIMEOUT", 1205],
  ])("a %s error the driver made is retried as its native error is", (code, errno) => {
    const normalized = normalizeError(Object.assign(new Error("native"), { errno }), {
      table: "jobs",
      operation: "test",
    });
    expect(BrokerError.is(normalized, code as "DEADLOCK")).toBe(true);
    expect(classifyError(normalized).retryable).toBe(true);
  });

  it("values that are not errors pass through unclassified", () => {
    expect(classifyError(null)).toMatchObject({ code: undefined, retryable: false });
    expect(normalizeError("text", { table: "jobs", operation: "test" })).toBe("text");
  });
});
