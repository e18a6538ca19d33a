import { BrokerError, type BrokerErrorCode } from "@rowclaim/core";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { codeForError, isBusyError, normalizeError } from "../src/index.js";

/** A native error as better-sqlite3 throws it: an Error with an SQLITE_* code. */
function native(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

const cases: readonly {
  /** The error, for the test's name. */
  readonly what: string;
  readonly error: unknown;
  readonly code: BrokerErrorCode | undefined;
  readonly busy: boolean;
}[] = [
  {
    what: 'SQLITE_ERROR "no such table: jobs"',
    error: native("SQLITE_ERROR", "no such table: jobs"),
    code: "SCHEMA",
    busy: false,
  },
  {
    what: 'SQLITE_ERROR "no such column: run_at"',
    error: native("SQLITE_ERROR", "no such column: run_at"),
    code: "SCHEMA",
    busy: false,
  },
  {
    what: 'SQLITE_ERROR "table jobs has no column named account"',
    error: native("SQLITE_ERROR", "table jobs has no column named account"),
    code: "SCHEMA",
    busy: false,
  },
  {
    what: `SQLITE_ERROR 'near "x": syntax error'`,
    error: native("SQLITE_ERROR", 'near "x": syntax error'),
    code: undefined,
    busy: false,
  },
  {
    what: 'SQLITE_CONSTRAINT_NOTNULL "NOT NULL constraint failed: jobs.payload"',
    error: native("SQLITE_CONSTRAINT_NOTNULL", "NOT NULL constraint failed: jobs.payload"),
    code: "CONSTRAINT",
    busy: false,
  },
  {
    what: 'SQLITE_CONSTRAINT_UNIQUE "UNIQUE constraint failed"',
    error: native("SQLITE_CONSTRAINT_UNIQUE", "UNIQUE constraint failed"),
    code: "CONSTRAINT",
    busy: false,
  },
  {
    what: 'SQLITE_CONSTRAINT_CHECK "CHECK constraint failed"',
    error: native("SQLITE_CONSTRAINT_CHECK", "CHECK constraint failed"),
    code: "CONSTRAINT",
    busy: false,
  },
  {
    what: 'SQLITE_MISMATCH "datatype mismatch"',
    error: native("SQLITE_MISMATCH", "datatype mismatch"),
    code: "INVALID_ARGUMENT",
    busy: false,
  },
  {
    what: 'SQLITE_TOOBIG "string or blob too big"',
    error: native("SQLITE_TOOBIG", "string or blob too big"),
    code: "INVALID_ARGUMENT",
    busy: false,
  },
  {
    what: 'SQLITE_RANGE "column index out of range"',
    error: native("SQLITE_RANGE", "column index out of range"),
    code: "INVALID_ARGUMENT",
    busy: false,
  },
  {
    what: 'SQLITE_BUSY "database is locked"',
    error: native("SQLITE_BUSY", "database is locked"),
    code: "CONNECTION_TIMEOUT",
    busy: true,
  },
  {
    what: 'SQLITE_BUSY_SNAPSHOT "database is locked"',
    error: native("SQLITE_BUSY_SNAPSHOT", "database is locked"),
    code: "CONNECTION_TIMEOUT",
    busy: true,
  },
  {
    what: 'SQLITE_BUSY_RECOVERY "database is locked"',
    error: native("SQLITE_BUSY_RECOVERY", "database is locked"),
    code: "CONNECTION_TIMEOUT",
    busy: true,
  },
  {
    what: 'SQLITE_LOCKED "database table is locked"',
    error: native("SQLITE_LOCKED", "database table is locked"),
    code: "CONNECTION_TIMEOUT",
    busy: true,
  },
  {
    what: 'SQLITE_LOCKED_SHAREDCACHE "database table is locked"',
    error: native("SQLITE_LOCKED_SHAREDCACHE", "database table is locked"),
    code: "CONNECTION_TIMEOUT",
    busy: true,
  },
  {
    what: 'SQLITE_READONLY "attempt to write a readonly database"',
    error: native("SQLITE_READONLY", "attempt to write a readonly database"),
    code: undefined,
    busy: false,
  },
  {
    what: 'SQLITE_IOERR_WRITE "disk I/O error"',
    error: native("SQLITE_IOERR_WRITE", "disk I/O error"),
    code: undefined,
    busy: false,
  },
  {
    what: 'a TypeError "The database connection is not open"',
    error: new TypeError("The database connection is not open"),
    code: "CLOSED",
    busy: false,
  },
  { what: "any other TypeError", error: new TypeError("something else"), code: undefined, busy: false },
  { what: "an Error without a code", error: new Error("no code"), code: undefined, busy: false },
  { what: "a string", error: "a string", code: undefined, busy: false },
  { what: "null", error: null, code: undefined, busy: false },
];

describe("normalizeError maps SQLite errors to core codes", () => {
  for (const { what, error, code, busy } of cases) {
    const becomes = code === undefined ? "gets no code and is returned as it is" : `becomes ${code}`;
    it(`${what} ${becomes}, and ${busy ? "counts as busy (retried)" : "does not count as busy"}`, () => {
      expect(codeForError(error)).toBe(code);
      expect(isBusyError(error)).toBe(busy);
      const normalized = normalizeError(error, { table: "jobs", operation: "a test" });
      if (code === undefined) {
        expect(normalized).toBe(error);
      } else {
        expect(BrokerError.is(normalized, code)).toBe(true);
        expect((normalized as BrokerError).cause).toBe(error);
        expect((normalized as BrokerError).table).toBe("jobs");
      }
    });
  }

  it("recognises the errors a real better-sqlite3 connection throws", () => {
    const db = new Database(":memory:");
    const thrown = (run: () => unknown): unknown => {
      try {
        run();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(codeForError(thrown(() => db.prepare("SELECT * FROM nowhere")))).toBe("SCHEMA");
    db.exec("CREATE TABLE t (x NOT NULL)");
    expect(codeForError(thrown(() => db.prepare("INSERT INTO t (x) VALUES (NULL)").run()))).toBe(
      "CONSTRAINT",
    );
    db.close();
    expect(codeForError(thrown(() => db.prepare("SELECT 1")))).toBe("CLOSED");
  });
});
