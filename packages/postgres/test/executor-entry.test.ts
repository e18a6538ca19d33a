// `@rowclaim/postgres/executor`, the driver on a pool of any client (the seam @rowclaim/postgres-js
// uses), is an entry point of its own that loads no database client: it imports with `pg` absent.
import { fileURLToPath } from "node:url";
import { importWithout } from "@rowclaim/tooling/import-without";
import { describe, expect, test } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

describe("@rowclaim/postgres/executor loads without the database client", () => {
  test("it imports with pg unresolvable and exports the driver factory on a pool", async () => {
    const loaded = await importWithout(packageDir, "@rowclaim/postgres/executor", ["pg"]);
    expect(loaded).toMatchObject({ ok: true });
    expect(loaded.ok && loaded.exports).toEqual(
      expect.arrayContaining(["createPostgresDriverOn", "checkExecutorOptions", "isConnectionLost"]),
    );
  });
});
