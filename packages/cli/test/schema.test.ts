import { join } from "node:path";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, it } from "vitest";
import { type AdminConnection, openAdminConnection } from "../src/admin-connection.js";
import { columnListSql, dropTableSql } from "../src/admin-sql.js";
import { type Dialect, parseTarget, type Target } from "../src/target.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

const quote = { sqlite: '"', postgres: '"', mysql: "`" } as const;

async function targetFor(dialect: Dialect): Promise<Target> {
  if (dialect === "sqlite") return { dialect, filename: join(tempDir(), "schema.db") };
  return parseTarget(await databaseUrl(dialect));
}

const connections: AdminConnection[] = [];
afterAll(async () => {
  await Promise.allSettled(connections.map((connection) => connection.close()));
});

describe.each(["sqlite", "postgres", "mysql"] as const)("rowclaim schema --dialect %s", (dialect) => {
  it("prints a CREATE TABLE with the quoted table name, the role columns and the claim-order index", async () => {
    const result = await runMain(["schema", "--dialect", dialect, "--table", "jobs"]);
    expect(result.code).toBe(0);
    const q = quote[dialect];
    expect(result.stdout).toContain(`CREATE TABLE`);
    expect(result.stdout).toContain(`${q}jobs${q}`);
    for (const column of ["id", "payload", "attempt", "run_at", "priority", "queue", "locked_until"]) {
      expect(result.stdout).toContain(`${q}${column}${q}`);
    }
    expect(result.stdout).not.toContain(`${q}processed_at${q}`);
    expect(result.stdout).toMatch(/INDEX|KEY/);
  });

  it("adds job_key and its unique index with --unique-key", async () => {
    const result = await runMain(["schema", "--dialect", dialect, "--table", "jobs", "--unique-key"]);
    expect(result.code).toBe(0);
    const q = quote[dialect];
    expect(result.stdout).toContain(`${q}job_key${q}`);
    expect(result.stdout).toContain(`${q}jobs_key${q}`);
    expect(result.stdout).toMatch(/UNIQUE (INDEX|KEY)/);
  });

  it("leaves locked_until out of a row lock or advisory table and adds the key's columns to an advisory one", async () => {
    const q = quote[dialect];
    const rowLock = await runMain([
      "schema",
      "--dialect",
      dialect,
      "--table",
      "jobs",
      "--form",
      "rowLock",
      "--processed-at",
    ]);
    expect(rowLock.code).toBe(0);
    expect(rowLock.stdout).not.toContain(`${q}locked_until${q}`);
    expect(rowLock.stdout).toContain(`${q}processed_at${q}`);
    const advisory = await runMain([
      "schema",
      "--dialect",
      dialect,
      "--table",
      "jobs",
      "--form",
      "advisory",
      "--key",
      "jobs-{account}",
    ]);
    expect(advisory.code).toBe(0);
    expect(advisory.stdout).toContain(`${q}account${q}`);
    expect(advisory.stdout).not.toContain(`${q}locked_until${q}`);
  });

  it("prints DDL the database runs, creating every column", async () => {
    const table = uniquePrefix("schema");
    const result = await runMain([
      "schema",
      "--dialect",
      dialect,
      "--table",
      table,
      "--processed-at",
      "--headers",
    ]);
    expect(result.code).toBe(0);
    const admin = await openAdminConnection(await targetFor(dialect));
    connections.push(admin);
    try {
      await admin.execute(result.stdout);
      const columns = (await admin.query(columnListSql(dialect), [table])).map((row) => row.name);
      expect(columns).toEqual([
        "id",
        "payload",
        "attempt",
        "run_at",
        "priority",
        "queue",
        "processed_at",
        "locked_until",
        "headers",
      ]);
    } finally {
      await admin.execute(dropTableSql(dialect, table));
    }
  });

  it("quotes a table name with quote characters and spaces", async () => {
    const name = `we"ird\`name ${dialect}`;
    const result = await runMain(["schema", "--dialect", dialect, "--table", name]);
    expect(result.code).toBe(0);
    const q = quote[dialect];
    expect(result.stdout).toContain(`${q}${name.replaceAll(q, q + q)}${q}`);
  });
});

describe("rowclaim schema for a form the dialect's driver does not offer", () => {
  it("prints the DDL and a note on stderr that the SQLite driver offers no row lock form", async () => {
    const result = await runMain(["schema", "--dialect", "sqlite", "--table", "jobs", "--form", "rowLock"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("CREATE TABLE");
    expect(result.stderr).toContain("does not offer the rowLock form");
  });
});
