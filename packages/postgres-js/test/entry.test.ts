// @rowclaim/postgres-js runs @rowclaim/postgres on postgres.js: it loads without `pg` installed.
import { fileURLToPath } from "node:url";
import { importWithout } from "@rowclaim/tooling/import-without";
import { describe, expect, test } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

describe("@rowclaim/postgres-js loads without pg", () => {
  test("it imports with pg unresolvable and exports createPostgresJsDriver", async () => {
    const loaded = await importWithout(packageDir, "@rowclaim/postgres-js", ["pg"]);
    expect(loaded).toMatchObject({ ok: true });
    expect(loaded.ok && loaded.exports).toEqual(expect.arrayContaining(["createPostgresJsDriver"]));
  });
});
