// `@rowclaim/sqlite/sql`, the dialect's statement builders and quoting, is an entry point of its
// own that loads no database client: it imports with `better-sqlite3` not installed.
import { fileURLToPath } from "node:url";
import { importWithout } from "@rowclaim/tooling/import-without";
import { describe, expect, test } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

describe("@rowclaim/sqlite/sql loads without the database client", () => {
  test("it imports with better-sqlite3 unresolvable and exports the quoting and the statement builders", async () => {
    const loaded = await importWithout(packageDir, "@rowclaim/sqlite/sql", ["better-sqlite3"]);
    expect(loaded).toMatchObject({ ok: true });
    expect(loaded.ok && loaded.exports).toEqual(expect.arrayContaining(["quoteIdentifier", "leaseClaimSql"]));
  });

  test("the package's root entry point, which does load better-sqlite3, fails the same way (the check can fail)", async () => {
    const loaded = await importWithout(packageDir, "@rowclaim/sqlite", ["better-sqlite3"]);
    expect(loaded).toEqual({ ok: false, error: "ERR_MODULE_NOT_FOUND" });
  });
});
