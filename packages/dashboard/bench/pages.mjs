// The dashboard's page benchmark (not a test): fills a fresh table with 1,000,000 rows, then asks
// the handler for each main page many times with cached counts and prints the median and the
// 95th percentile answer time. Run after `pnpm build`:
//
//   pnpm --filter @rowclaim/dashboard bench                 # PostgreSQL (ROWCLAIM_POSTGRES_URL or local)
//   pnpm --filter @rowclaim/dashboard bench -- --db sqlite  # or mysql; --rows N, --runs N
//
// The table is dropped (or the SQLite file removed) at the end.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { createDashboard } from "../dist/index.js";

const { values } = parseArgs({
  options: {
    db: { type: "string", default: "postgres" },
    rows: { type: "string", default: "1000000" },
    runs: { type: "string", default: "40" },
  },
});
const rows = Number(values.rows);
const runs = Number(values.runs);
const name = `rc_dash_bench_${process.pid}`;
const table = defineTable({
  name,
  columns: {
    id: "id",
    payload: "payload",
    attempt: "attempt",
    runAt: "run_at",
    priority: "priority",
    group: "queue",
    processedAt: "processed_at",
    lockedUntil: "locked_until",
    headers: "headers",
  },
  maxAttempts: 5,
  deadLetter: { group: "dead" },
});

/** Opens the database, creates and fills the table; returns the driver and a cleanup. */
async function open(kind) {
  if (kind === "sqlite") {
    const { createSqliteDriver } = await import("@rowclaim/sqlite");
    const dir = mkdtempSync(join(tmpdir(), "rowclaim-dashboard-bench-"));
    const driver = createSqliteDriver({ filename: join(dir, "bench.db") });
    const db = driver.database;
    db.exec(driver.schemaSql(table));
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})
      INSERT INTO "${name}" (payload, queue, attempt, run_at, processed_at)
      SELECT json_object('order', 'order-' || i, 'amount', i % 1000),
             CASE i % 10 WHEN 0 THEN 'dead' WHEN 1 THEN 'emails' ELSE NULL END,
             1, CAST(strftime('%s','now') AS INTEGER) * 1000 + (i % 3) * 3600000,
             CASE WHEN i % 4 = 0 AND i % 10 <> 0 THEN CAST(strftime('%s','now') AS INTEGER) * 1000 ELSE NULL END
      FROM n`);
    return { driver, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (kind === "postgres") {
    const { createPostgresDriver } = await import("@rowclaim/postgres");
    const url = process.env.ROWCLAIM_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
    const driver = createPostgresDriver({ url });
    const pg = (await import("pg")).default;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(driver.schemaSql(table));
    await admin.query(`INSERT INTO "${name}" (payload, queue, attempt, run_at, processed_at)
      SELECT jsonb_build_object('order', 'order-' || i, 'amount', i % 1000),
             CASE i % 10 WHEN 0 THEN 'dead' WHEN 1 THEN 'emails' ELSE NULL END,
             1, now() + (i % 3) * interval '1 hour',
             CASE WHEN i % 4 = 0 AND i % 10 <> 0 THEN now() ELSE NULL END
      FROM generate_series(1, ${rows}) AS i`);
    await admin.query(`ANALYZE "${name}"`);
    return {
      driver,
      cleanup: async () => {
        await admin.query(`DROP TABLE IF EXISTS "${name}"`);
        await admin.end();
      },
    };
  }
  const { createMysqlDriver } = await import("@rowclaim/mysql");
  const url = process.env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";
  const driver = createMysqlDriver({ url });
  const mysql = (await import("mysql2/promise")).default;
  const admin = await mysql.createConnection({ uri: url, multipleStatements: true });
  await admin.query(driver.schemaSql(table));
  await admin.query(`INSERT INTO \`${name}\` (payload, queue, attempt, run_at, processed_at)
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})
    SELECT JSON_OBJECT('order', CONCAT('order-', i), 'amount', i % 1000),
           CASE i % 10 WHEN 0 THEN 'dead' WHEN 1 THEN 'emails' ELSE NULL END,
           1, NOW(6) + INTERVAL (i % 3) HOUR,
           CASE WHEN i % 4 = 0 AND i % 10 <> 0 THEN NOW(6) ELSE NULL END
    FROM n`);
  return {
    driver,
    cleanup: async () => {
      await admin.query(`DROP TABLE IF EXISTS \`${name}\``);
      await admin.end();
    },
  };
}

function percentile(sorted, share) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))];
}

const started = Date.now();
const { driver, cleanup } = await open(values.db);
console.log(
  `${values.db}: ${rows.toLocaleString("en")} rows in ${name}, filled in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
const broker = createBroker({ driver, logger: silentLogger });
const auth = `Basic ${Buffer.from("bench:bench-password").toString("base64")}`;
const dashboard = createDashboard({
  broker,
  tables: [table],
  auth: { basic: [{ username: "bench", password: "bench-password", role: "admin" }] },
  countsTtlMs: 3_600_000,
});
const pages = [
  ["overview", "/"],
  ["table, due rows", `/tables/${name}?state=due`],
  ["table, delayed rows", `/tables/${name}?state=delayed`],
  ["table, dead rows", `/tables/${name}?state=dead`],
  ["table, processed rows", `/tables/${name}?state=processed`],
  ["table, one group", `/tables/${name}?state=delayed&group=emails`],
  ["search by id", `/tables/${name}?state=due&q=500001`],
  ["row detail", `/tables/${name}/rows/500001`],
  ["search payload text (a scan)", `/tables/${name}?state=delayed&q=order-500001`],
  ["counts.json (script refresh)", `/tables/${name}/counts.json`],
];
try {
  const first = Date.now();
  const warm = await dashboard(new Request("http://bench.local/", { headers: { authorization: auth } }));
  if (warm.status !== 200) throw new Error(`the overview answered ${warm.status}: ${await warm.text()}`);
  console.log(`first read of the counts (capped, uncached): ${Date.now() - first} ms`);
  console.log(`\nmedian and p95 of ${runs} answers per page, counts cached:`);
  for (const [label, path] of pages) {
    const times = [];
    for (let run = 0; run < runs; run += 1) {
      const start = performance.now();
      const response = await dashboard(
        new Request(`http://bench.local${path}`, { headers: { authorization: auth } }),
      );
      await response.text();
      times.push(performance.now() - start);
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
    }
    times.sort((a, b) => a - b);
    console.log(
      `  ${label.padEnd(30)} median ${percentile(times, 0.5).toFixed(1).padStart(7)} ms   p95 ${percentile(times, 0.95).toFixed(1).padStart(7)} ms`,
    );
  }
} finally {
  await broker.close();
  await cleanup();
}
