// `rowclaim cancel`, `redrive` and `prune` on a config module's table, against each database.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, it } from "vitest";
import { type AdminConnection, openAdminConnection } from "../src/admin-connection.js";
import { dropTableSql, quoteIdentifier } from "../src/admin-sql.js";
import { createDriver } from "../src/connect.js";
import { parseDuration } from "../src/operation-target.js";
import { parseTarget } from "../src/target.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

const connections: AdminConnection[] = [];
const dropped: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.allSettled(dropped.map((drop) => drop()));
  await Promise.allSettled(connections.map((connection) => connection.close()));
});

async function waitFor(what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each(["sqlite", "postgres", "mysql"] as const)("the operations commands on %s", (dialect) => {
  it("cancel, redrive and prune act on the config's table and report what they did", async () => {
    const url = dialect === "sqlite" ? join(tempDir(), "ops.db") : await databaseUrl(dialect);
    const admin = await openAdminConnection(parseTarget(url));
    connections.push(admin);
    const name = uniquePrefix(`ops_${dialect}`);
    dropped.push(() => admin.execute(dropTableSql(dialect, name)));
    const description = {
      name,
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        runAt: "run_at",
        group: "queue",
        processedAt: "processed_at",
        lockedUntil: "locked_until",
      },
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    };
    const config = join(tempDir(), "rowclaim.config.mjs");
    writeFileSync(config, `export default ${JSON.stringify({ url, tables: [description] })};\n`);
    expect((await runMain(["schema", "--apply", "--config", config])).code).toBe(0);

    const table = defineTable(description);
    const broker = createBroker({ driver: await createDriver(parseTarget(url)) });
    try {
      const queued = await broker.publishMany(table, [
        { payload: "a", group: "work", runAt: new Date(Date.now() + 3600_000) },
        { payload: "b", group: "work", runAt: new Date(Date.now() + 3600_000) },
      ]);
      await broker.publishMany(
        table,
        [1, 2, 3].map((n) => ({ payload: n, group: "dead" })),
      );
      await broker.publishMany(
        table,
        [1, 2, 3].map((n) => ({ payload: n, group: "done" })),
      );
      const q = (column: string): string => quoteIdentifier(dialect, column);
      const rows = (): Promise<Record<string, unknown>[]> =>
        admin.query(`SELECT * FROM ${q(name)} ORDER BY ${q("id")}`);
      const subscription = await broker.subscribe(table, () => ack(), { group: "done", pollInterval: 20 });
      await waitFor(
        "the done rows processed",
        async () => (await rows()).filter((row) => row.processed_at !== null).length === 3,
      );
      await subscription.stop();

      const cancelled = await runMain([
        "cancel",
        "--config",
        config,
        "--id",
        String(queued[0]),
        "--id",
        "999999",
      ]);
      expect(cancelled.stdout).toContain("cancelled 1 row(s)");
      expect(cancelled.stdout).toContain("matched no queued row: 999999");
      expect(cancelled.code).toBe(1);

      const redriven = await runMain([
        "redrive",
        "--config",
        config,
        "--all",
        "--group",
        "work",
        "--batch-size",
        "2",
      ]);
      expect(redriven.stderr).toBe("");
      expect(redriven.stdout).toContain("redrove 3 dead row(s) in 2 batch(es)");
      expect(redriven.code).toBe(0);

      const pruned = await runMain(["prune", "--config", config, "--older-than", "0s"]);
      expect(pruned.stdout).toContain("pruned 3 processed row(s)");
      expect(pruned.code).toBe(0);

      const left = await rows();
      expect(left.length).toBe(4);
      expect(left.every((row) => row.queue === "work" && row.processed_at === null)).toBe(true);
      expect(left.filter((row) => Number(row.attempt) === 1).length).toBe(4);
    } finally {
      await broker.close();
    }
  });

  it("bad input is a usage error or a coded error, and writes nothing", async () => {
    const url = dialect === "sqlite" ? join(tempDir(), "bad.db") : await databaseUrl(dialect);
    const admin = await openAdminConnection(parseTarget(url));
    connections.push(admin);
    const name = uniquePrefix(`ops_bad_${dialect}`);
    dropped.push(() => admin.execute(dropTableSql(dialect, name)));
    const config = join(tempDir(), "rowclaim.config.mjs");
    writeFileSync(
      config,
      `export default ${JSON.stringify({ url, tables: [{ name, columns: { id: "id", payload: "payload", lockedUntil: "locked_until" } }] })};\n`,
    );
    expect((await runMain(["schema", "--apply", "--config", config])).code).toBe(0);
    const prune = await runMain(["prune", "--config", config, "--older-than", "1d"]);
    expect(prune.code).toBe(1);
    expect(prune.stderr).toContain("INVALID_ARGUMENT");
    const redrive = await runMain(["redrive", "--config", config, "--all"]);
    expect(redrive.code).toBe(1);
    expect(redrive.stderr).toContain("INVALID_ARGUMENT");
    expect((await runMain(["prune", "--config", config, "--older-than", "-1d"])).code).toBe(2);
    expect((await runMain(["cancel", "--config", config])).code).toBe(2);
    expect(await admin.query(`SELECT * FROM ${quoteIdentifier(dialect, name)}`)).toEqual([]);
  });
});

describe("parseDuration", () => {
  it("reads units and plain milliseconds", () => {
    expect(parseDuration("7d", "older-than", "prune")).toBe(7 * 86_400_000);
    expect(parseDuration("90s", "older-than", "prune")).toBe(90_000);
    expect(parseDuration("250", "older-than", "prune")).toBe(250);
    expect(() => parseDuration("-1d", "older-than", "prune")).toThrow();
  });
});
