// `@rowclaim/mysql/sql`, the dialect's statement builders and quoting, is an entry point of its
// own that loads no database client: it imports with `mysql2` not installed.
import { fileURLToPath } from "node:url";
import { importWithout } from "@rowclaim/tooling/import-without";
import { describe, expect, test } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

describe("@rowclaim/mysql/sql loads without the database client", () => {
  test("it imports with mysql2 unresolvable and exports the quoting and the statement builders", async () => {
    const loaded = await importWithout(packageDir, "@rowclaim/mysql/sql", ["mysql2"]);
    expect(loaded).toMatchObject({ ok: true });
    expect(loaded.ok && loaded.exports).toEqual(
      expect.arrayContaining(["quoteIdentifier", "TableStatements"]),
    );
  });

  test("the package's root entry point, which does load mysql2, fails the same way (the check can fail)", async () => {
    const loaded = await importWithout(packageDir, "@rowclaim/mysql", ["mysql2"]);
    expect(loaded).toEqual({ ok: false, error: "ERR_MODULE_NOT_FOUND" });
  });
});
