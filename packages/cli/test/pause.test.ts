import { join } from "node:path";
import { createBroker, silentLogger } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { describe, expect, it } from "vitest";
import { standardTable } from "../src/tables.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

describe("rowclaim pause and resume", () => {
  it("pause a group, then the table, and resume each: the database holds what a broker reads", async () => {
    const file = join(tempDir(), "pause.db");
    const name = uniquePrefix("pause");
    const table = standardTable({ name, form: "lease" });
    const broker = createBroker({ driver: createSqliteDriver({ filename: file }), logger: silentLogger });
    try {
      const group = await runMain(["pause", "--url", file, "--table", name, "--group", "bulk"]);
      expect(group.code, group.stderr).toBe(0);
      expect(group.stdout).toContain(`paused group bulk of table ${name}`);
      expect(await broker.controlState(table)).toMatchObject({ paused: false, pausedGroups: ["bulk"] });
      const whole = await runMain(["pause", "--url", file, "--table", name]);
      expect(whole.code, whole.stderr).toBe(0);
      expect(await broker.controlState(table)).toMatchObject({ paused: true, pausedGroups: ["bulk"] });
      const resumed = await runMain(["resume", "--url", file, "--table", name]);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain("groups paused on their own: bulk");
      await runMain(["resume", "--url", file, "--table", name, "--group", "bulk"]);
      expect(await broker.controlState(table)).toMatchObject({ paused: false, pausedGroups: [] });
    } finally {
      await broker.close();
    }
  });

  it("refuses a command line without --table (exit 2)", async () => {
    const result = await runMain(["pause", "--url", join(tempDir(), "none.db")]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--table");
  });
});
