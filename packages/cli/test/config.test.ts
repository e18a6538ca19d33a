// The config module: `schema`, `check` and `status` on the user's own table descriptions (the
// README's quick-start table, which has none of the standard layout's run_at, priority or queue).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createBroker, defineTable, silentLogger, type TableDescription } from "@rowclaim/core";
import { databaseUrl } from "@rowclaim/tooling/test-env";
import { afterAll, describe, expect, it } from "vitest";
import { type AdminConnection, openAdminConnection } from "../src/admin-connection.js";
import { dropTableSql, quoteIdentifier } from "../src/admin-sql.js";
import { createDriver } from "../src/connect.js";
import { parseTarget } from "../src/target.js";
import { packageDir } from "./build.js";
import { runMain, tempDir, uniquePrefix } from "./support.js";

const connections: AdminConnection[] = [];
const dropped: (() => Promise<void>)[] = [];
const madeDirs: string[] = [];
afterAll(async () => {
  await Promise.allSettled(dropped.map((drop) => drop()));
  await Promise.allSettled(connections.map((connection) => connection.close()));
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
});

/** The README's quick-start table: id, payload, attempt and the lease column, nothing else. */
function quickStart(name: string): Record<string, unknown> {
  return {
    name,
    columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
  };
}

/** Writes a config module exporting `body` as its default export; returns its path. */
function writeConfig(dir: string, body: unknown, file = "rowclaim.config.mjs"): string {
  const path = join(dir, file);
  writeFileSync(path, `export default ${JSON.stringify(body, null, 2)};\n`);
  return path;
}

interface Count {
  readonly count: number;
  readonly capped: boolean;
}

interface StatusJson {
  readonly table: string;
  readonly form: string;
  readonly groups: readonly {
    group: string | null;
    due: Count;
    delayed: Count;
    inWork: Count;
    dead: Count;
    processed: Count;
  }[];
  readonly inWork?: readonly { id: number | string; holder: { form: string; lockedUntil?: string } }[];
}

/** A group's figures: due, delayed, in work, dead, processed. */
function figures(group: StatusJson["groups"][number]): number[] {
  return [group.due, group.delayed, group.inWork, group.dead, group.processed].map((count) => count.count);
}

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A broker on the config's database, for rows held in work while status reads them. */
async function brokerOn(url: string) {
  const driver = await createDriver(parseTarget(url));
  return createBroker({ driver, logger: silentLogger });
}

describe.each(["sqlite", "postgres", "mysql"] as const)("a config module's tables on %s", (dialect) => {
  it("schema --apply creates the quick-start table, check exits 0, and status prints its real state, a row a broker holds in work", async () => {
    const url = dialect === "sqlite" ? join(tempDir(), "config.db") : await databaseUrl(dialect);
    const admin = await openAdminConnection(parseTarget(url));
    connections.push(admin);
    const table = uniquePrefix(`config_${dialect}`);
    dropped.push(() => admin.execute(dropTableSql(dialect, table)));
    const config = writeConfig(tempDir(), { url, tables: [quickStart(table)] });

    const applied = await runMain(["schema", "--apply", "--config", config]);
    expect(applied.code).toBe(0);
    const checked = await runMain(["check", "--config", config]);
    expect(checked.stdout).toContain(`table ${table} in`);
    expect(checked.stdout).toContain("matches its description");
    expect(checked.code).toBe(0);

    const t = quoteIdentifier(dialect, table);
    const p = quoteIdentifier(dialect, "payload");
    await admin.execute(
      `INSERT INTO ${t} (${p}) VALUES ('{"to":"a@example.com"}'), ('{"to":"b@example.com"}')`,
    );
    const status = await runMain(["status", "--config", config, "--json"]);
    expect(status.code).toBe(0);
    const [only] = JSON.parse(status.stdout) as StatusJson[];
    expect(only?.table).toBe(table);
    expect(only?.form).toBe("lease");
    expect(only?.groups.map(figures)).toEqual([[2, 0, 0, 0, 0]]);

    // A broker holds one row in work: status shows it, and --in-work lists it with its lease.
    const broker = await brokerOn(url);
    const releases: (() => void)[] = [];
    try {
      const jobs = defineTable(quickStart(table) as unknown as TableDescription);
      await broker.subscribe(jobs, () => new Promise<void>((resolve) => releases.push(resolve)), {
        workers: 1,
        pollInterval: 50,
      });
      await waitUntil(() => releases.length === 1);
      const busy = await runMain(["status", "--config", config, "--json", "--in-work"]);
      expect(busy.code, busy.stderr).toBe(0);
      const [held] = JSON.parse(busy.stdout) as StatusJson[];
      expect(held?.groups.map(figures)).toEqual([[1, 0, 1, 0, 0]]);
      expect(held?.inWork?.map((row) => row.holder.form)).toEqual(["lease"]);
      expect(Date.parse(held?.inWork?.[0]?.holder.lockedUntil ?? "")).toBeGreaterThan(Date.now());
      const text = await runMain(["status", "--config", config, "--in-work"]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain(table);
      expect(text.stdout).toContain("lease until");
    } finally {
      for (const release of releases) release();
      await broker.close({ timeout: 5000 });
    }
  });

  it("status counts the rows of a description's dead-letter group as dead, not due", async () => {
    const url = dialect === "sqlite" ? join(tempDir(), "dead.db") : await databaseUrl(dialect);
    const admin = await openAdminConnection(parseTarget(url));
    connections.push(admin);
    const table = uniquePrefix(`config_dead_${dialect}`);
    dropped.push(() => admin.execute(dropTableSql(dialect, table)));
    const description = {
      name: table,
      columns: {
        id: "id",
        payload: "payload",
        attempt: "attempt",
        group: "queue",
        lockedUntil: "locked_until",
      },
      maxAttempts: 3,
      deadLetter: { group: "dead" },
    };
    const config = writeConfig(tempDir(), { url, tables: [description] });
    expect((await runMain(["schema", "--apply", "--config", config])).code).toBe(0);
    const q = (name: string): string => quoteIdentifier(dialect, name);
    await admin.execute(
      `INSERT INTO ${q(table)} (${q("payload")}, ${q("queue")}) VALUES ('{}', 'dead'), ('{}', 'dead'), ('{}', 'mail')`,
    );
    const status = await runMain(["status", "--config", config, "--json"]);
    expect(status.code, status.stderr).toBe(0);
    const [only] = JSON.parse(status.stdout) as StatusJson[];
    expect(only?.groups.map((group) => [group.group, figures(group)])).toEqual([
      ["dead", [0, 0, 0, 2, 0]],
      ["mail", [1, 0, 0, 0, 0]],
    ]);
  });
});

describe("a config module found in the current directory", () => {
  it("is used without --config, and a table description made with defineTable works as a plain one does", async () => {
    // Inside the package, so that the module's own import of @rowclaim/core resolves.
    const dir = mkdtempSync(join(packageDir, "test", "config-cwd-"));
    madeDirs.push(dir);
    const table = uniquePrefix("config_cwd");
    const url = join(tempDir(), "cwd.db");
    writeFileSync(
      join(dir, "rowclaim.config.mjs"),
      [
        `import { defineTable } from "@rowclaim/core";`,
        `export const url = ${JSON.stringify(url)};`,
        `export const tables = [defineTable(${JSON.stringify(quickStart(table))})];`,
        "",
      ].join("\n"),
    );
    const previous = process.cwd();
    process.chdir(dir);
    try {
      expect((await runMain(["schema", "--apply"])).code).toBe(0);
      const checked = await runMain(["check"]);
      expect(checked.stdout).toContain("matches its description");
      expect(checked.code).toBe(0);
      expect((await runMain(["check", "--table", table])).code).toBe(0);
    } finally {
      process.chdir(previous);
    }
  });
});

describe("a config module that cannot be used", () => {
  it("a --config that names no file fails with CONFIG and touches nothing", async () => {
    const result = await runMain(["check", "--config", join(tempDir(), "missing.mjs")]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("(CONFIG)");
  });

  it("a config without tables fails with CONFIG", async () => {
    const config = writeConfig(tempDir(), { url: "sqlite:x.db" });
    const result = await runMain(["status", "--config", config]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("(CONFIG)");
  });

  it("a table description that cannot work fails with core's DECLARATION code", async () => {
    const config = writeConfig(tempDir(), {
      url: "sqlite:x.db",
      tables: [{ name: "t", columns: { id: "id" } }],
    });
    const result = await runMain(["check", "--config", config]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("(DECLARATION)");
  });

  it("shape flags beside a config, and a --table the config does not list, are usage errors", async () => {
    const config = writeConfig(tempDir(), { url: "sqlite:x.db", tables: [quickStart("jobs")] });
    expect((await runMain(["check", "--config", config, "--form", "advisory"])).code).toBe(2);
    expect((await runMain(["check", "--config", config, "--table", "other"])).code).toBe(2);
    expect((await runMain(["status", "--config", config, "--group-column", "queue"])).code).toBe(2);
  });

  it("without a config, check still needs --table", async () => {
    expect((await runMain(["check", "--url", join(tempDir(), "none.db")])).code).toBe(2);
  });
});
