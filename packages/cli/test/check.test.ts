import { join } from "node:path";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, it } from "vitest";
import { type AdminConnection, openAdminConnection } from "../src/admin-connection.js";
import { dropTableSql, quoteIdentifier } from "../src/admin-sql.js";
import { parseTarget, type Target } from "../src/target.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

const connections: AdminConnection[] = [];
const dropped: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.allSettled(dropped.map((drop) => drop()));
  await Promise.allSettled(connections.map((connection) => connection.close()));
});

describe.each(["sqlite", "postgres", "mysql"] as const)(
  "rowclaim schema --apply and rowclaim check on %s",
  (dialect) => {
    async function setUp(): Promise<{ url: string; target: Target; admin: AdminConnection; table: string }> {
      const url = dialect === "sqlite" ? join(tempDir(), "check.db") : await databaseUrl(dialect);
      const target = parseTarget(url);
      const admin = await openAdminConnection(target);
      connections.push(admin);
      const table = uniquePrefix(`check_${dialect}`);
      dropped.push(() => admin.execute(dropTableSql(dialect, table)));
      return { url, target, admin, table };
    }

    it("apply creates the table, a second apply changes nothing, and check then exits 0", async () => {
      const { url, table } = await setUp();
      const missing = await runMain(["check", "--url", url, "--table", table, "--headers"]);
      expect(missing.code).toBe(1);
      expect(missing.stdout).toContain(`table ${table} does not exist`);
      const applied = await runMain(["schema", "--apply", "--url", url, "--table", table, "--headers"]);
      expect(applied.code).toBe(0);
      expect(applied.stdout).toContain("CREATE TABLE");
      const again = await runMain(["schema", "--apply", "--url", url, "--table", table, "--headers"]);
      expect(again.code).toBe(0);
      expect(again.stdout).toBe("");
      expect(again.stderr).toContain("already matches");
      const checked = await runMain(["check", "--url", url, "--table", table, "--headers"]);
      expect(checked.stdout).toContain("matches its description");
      expect(checked.code).toBe(0);
    });

    it("after a column is dropped, check exits 1 and prints the ADD COLUMN that fixes it; apply runs it", async () => {
      const { url, admin, table } = await setUp();
      expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
      await admin.execute(
        `ALTER TABLE ${quoteIdentifier(dialect, table)} DROP COLUMN ${quoteIdentifier(dialect, "locked_until")}`,
      );
      const checked = await runMain(["check", "--url", url, "--table", table]);
      expect(checked.code).toBe(1);
      expect(checked.stdout).toContain(`table ${table}: column locked_until is missing`);
      const q = quoteIdentifier(dialect, "locked_until");
      expect(checked.stdout).toContain(`ALTER TABLE ${quoteIdentifier(dialect, table)} ADD COLUMN ${q}`);
      const fixed = await runMain(["schema", "--apply", "--url", url, "--table", table]);
      expect(fixed.code).toBe(0);
      expect(fixed.stdout).toContain("ADD COLUMN");
      expect((await runMain(["check", "--url", url, "--table", table])).code).toBe(0);
    });

    it("a missing claim-order index is reported with the CREATE INDEX that fixes it", async () => {
      const { url, admin, table } = await setUp();
      expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
      const index = quoteIdentifier(dialect, `${table}_claim_order`);
      await admin.execute(
        dialect === "mysql"
          ? `DROP INDEX ${index} ON ${quoteIdentifier(dialect, table)}`
          : `DROP INDEX ${index}`,
      );
      const checked = await runMain(["check", "--url", url, "--table", table]);
      expect(checked.code).toBe(1);
      expect(checked.stdout).toContain("no index leads with the claim order");
      expect(checked.stdout).toContain(`CREATE INDEX`);
      expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
      expect((await runMain(["check", "--url", url, "--table", table])).code).toBe(0);
    });

    it("after an advisory key column is dropped, check reports it and apply adds it back", async () => {
      const { url, admin, table } = await setUp();
      const shape = ["--table", table, "--form", "advisory", "--key", `${table}-{account}`];
      expect((await runMain(["schema", "--apply", "--url", url, ...shape])).code).toBe(0);
      await admin.execute(
        `ALTER TABLE ${quoteIdentifier(dialect, table)} DROP COLUMN ${quoteIdentifier(dialect, "account")}`,
      );
      const checked = await runMain(["check", "--url", url, ...shape]);
      expect(checked.code).toBe(1);
      expect(checked.stdout).toContain(`table ${table}: column account is missing`);
      const fixed = await runMain(["schema", "--apply", "--url", url, ...shape]);
      expect(fixed.code).toBe(0);
      expect((await runMain(["check", "--url", url, ...shape])).code).toBe(0);
    });

    it.skipIf(dialect === "sqlite")(
      "after a column of the claim-order index is dropped, every fix check prints runs",
      async () => {
        // SQLite refuses to drop an indexed column; PostgreSQL drops the index with it; MariaDB
        // keeps the index, under its name, with the columns that are left.
        const { url, admin, table } = await setUp();
        expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
        await admin.execute(
          `ALTER TABLE ${quoteIdentifier(dialect, table)} DROP COLUMN ${quoteIdentifier(dialect, "priority")}`,
        );
        const checked = await runMain(["check", "--url", url, "--table", table]);
        expect(checked.code).toBe(1);
        const fixes = checked.stdout.slice(checked.stdout.indexOf("To fix it")).split("\n").slice(1);
        for (const statement of fixes.filter((line) => line.trim() !== "" && !line.startsWith("--")))
          await admin.execute(statement);
        expect((await runMain(["check", "--url", url, "--table", table])).code).toBe(0);
        await admin.execute(
          `ALTER TABLE ${quoteIdentifier(dialect, table)} DROP COLUMN ${quoteIdentifier(dialect, "priority")}`,
        );
        expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
        expect((await runMain(["check", "--url", url, "--table", table])).code).toBe(0);
      },
    );

    it.skipIf(dialect === "sqlite")(
      "apply changes nothing on a column of another type without --allow-rewrite, and prints what it would run",
      async () => {
        const { url, admin, table } = await setUp();
        expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
        const t = quoteIdentifier(dialect, table);
        const c = quoteIdentifier(dialect, "payload");
        await admin.execute(
          dialect === "postgres"
            ? `ALTER TABLE ${t} ALTER COLUMN ${c} TYPE text`
            : `ALTER TABLE ${t} MODIFY COLUMN ${c} VARCHAR(2000) NOT NULL`,
        );
        const refused = await runMain(["schema", "--apply", "--url", url, "--table", table]);
        expect(refused.code).toBe(1);
        expect(refused.stdout).toContain(dialect === "postgres" ? "ALTER COLUMN" : "MODIFY COLUMN");
        expect(refused.stderr).toContain("--allow-rewrite");
        expect((await runMain(["check", "--url", url, "--table", table])).code).toBe(1);
        const applied = await runMain([
          "schema",
          "--apply",
          "--allow-rewrite",
          "--url",
          url,
          "--table",
          table,
        ]);
        expect(applied.code).toBe(0);
        expect((await runMain(["check", "--url", url, "--table", table])).code).toBe(0);
      },
    );

    it.runIf(dialect === "sqlite")(
      "apply changes nothing on a column of another type, and says the table must be rebuilt",
      async () => {
        const { url, admin, table } = await setUp();
        const t = quoteIdentifier(dialect, table);
        await admin.execute(
          `CREATE TABLE ${t} ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "payload" TEXT NOT NULL, "attempt" INTEGER NOT NULL DEFAULT 1, "run_at" INTEGER, "priority" INTEGER NOT NULL DEFAULT 0, "queue" TEXT, "locked_until" TEXT)`,
        );
        const before = await admin.query(
          `SELECT type FROM pragma_table_info(?) WHERE name = 'locked_until'`,
          [table],
        );
        const refused = await runMain([
          "schema",
          "--apply",
          "--allow-rewrite",
          "--url",
          url,
          "--table",
          table,
        ]);
        expect(refused.code).toBe(1);
        expect(refused.stdout).toContain("SQLite cannot change the type");
        expect(refused.stderr).toContain("nothing was changed");
        expect(
          await admin.query(`SELECT type FROM pragma_table_info(?) WHERE name = 'locked_until'`, [table]),
        ).toEqual(before);
      },
    );

    it("a column of another type is reported with the expected type", async () => {
      const { url, admin, table } = await setUp();
      const t = quoteIdentifier(dialect, table);
      const c = (name: string): string => quoteIdentifier(dialect, name);
      const id =
        dialect === "sqlite"
          ? "INTEGER PRIMARY KEY AUTOINCREMENT"
          : dialect === "postgres"
            ? "bigserial PRIMARY KEY"
            : "BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY";
      // locked_until holds the lease token: a text column cannot compare it as a time.
      const wrong = dialect === "sqlite" ? "TEXT" : dialect === "postgres" ? "text" : "VARCHAR(64)";
      await admin.execute(
        `CREATE TABLE ${t} (${c("id")} ${id}, ${c("payload")} ${dialect === "sqlite" ? "TEXT" : "json"} NOT NULL, ${c("locked_until")} ${wrong})`,
      );
      const checked = await runMain(["check", "--url", url, "--table", table, "--form", "rowLock"]);
      const lease = await runMain(["check", "--url", url, "--table", table]);
      expect(checked.code).toBe(1);
      expect(lease.code).toBe(1);
      expect(lease.stdout).toMatch(/column locked_until is \S+, the description needs/);
    });
  },
);

describe("rowclaim check and schema --apply on a PostgreSQL lease table made before the recommended fillfactor", () => {
  it("check advises the fillfactor and still exits 0; apply sets it, and check then has nothing to say", async () => {
    const url = await databaseUrl("postgres");
    const admin = await openAdminConnection(parseTarget(url));
    connections.push(admin);
    const table = uniquePrefix("check_fill");
    dropped.push(() => admin.execute(dropTableSql("postgres", table)));
    expect((await runMain(["schema", "--apply", "--url", url, "--table", table])).code).toBe(0);
    const t = quoteIdentifier("postgres", table);
    // As `schemaSql` made it before: PostgreSQL's default fill.
    await admin.execute(`ALTER TABLE ${t} RESET (fillfactor)`);
    const checked = await runMain(["check", "--url", url, "--table", table]);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain(`table ${table}: fillfactor 100, where 45 is recommended`);
    expect(checked.stdout).toContain(`ALTER TABLE ${t} SET (fillfactor = 45);`);
    const applied = await runMain(["schema", "--apply", "--url", url, "--table", table]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain(`ALTER TABLE ${t} SET (fillfactor = 45);`);
    const after = await runMain(["check", "--url", url, "--table", table]);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain("matches its description");
    expect(after.stdout).not.toContain("fillfactor");
  });
});
