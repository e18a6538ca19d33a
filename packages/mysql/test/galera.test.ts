/**
 * A real three-node MariaDB Galera cluster (tooling/galera.sh): subscribers on different nodes
 * drain one table. The lease form works there (certification conflicts come back as deadlocks and
 * are retried); the row lock and advisory lock forms are refused by the startup probe, since
 * Galera keeps row locks and GET_LOCK on one node.
 *
 * Long (about a minute, plus about 25 s to bootstrap the cluster the first time), so it runs only
 * with ROWCLAIM_CLUSTER_TESTS=1 (.ci/run sets it), or on its own:
 *   ROWCLAIM_CLUSTER_TESTS=1 pnpm --filter @rowclaim/mysql exec vitest run test/galera.test.ts
 * The nodes come from ROWCLAIM_GALERA_URLS (three URLs, comma-separated); without it the test runs
 * tooling/galera.sh (idempotent) and uses 127.0.0.1:3311-3313.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  ack,
  BrokerError,
  createBroker,
  defineTable,
  type Subscription,
  silentLogger,
  type TableDefinition,
} from "@rowclaim/core";
import { createPool, type Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMysqlDriver, type MysqlDriver } from "../src/index.js";
import { quote, uniqueName } from "./support.js";

const enabled = process.env.ROWCLAIM_CLUSTER_TESTS === "1";
const script = fileURLToPath(new URL("../../../tooling/galera.sh", import.meta.url));

function galeraUrls(): string[] {
  const given = process.env.ROWCLAIM_GALERA_URLS;
  if (given !== undefined && given !== "") return given.split(",").map((url) => url.trim());
  execFileSync("bash", [script], { stdio: ["ignore", "inherit", "inherit"], timeout: 600_000 });
  return [3311, 3312, 3313].map((port) => `mysql://root@127.0.0.1:${port}/test`);
}

let urls: string[] = [];
let admin: Pool;
const drivers: MysqlDriver[] = [];
const tables: string[] = [];

beforeAll(() => {
  if (!enabled) return;
  urls = galeraUrls();
  admin = createPool({ uri: urls[0] as string, connectionLimit: 2, timezone: "Z" });
}, 600_000);

afterAll(async () => {
  if (!enabled) return;
  await Promise.allSettled(drivers.map((driver) => driver.close()));
  for (const name of tables) await admin.query(`DROP TABLE IF EXISTS ${quote(name)}`).catch(() => undefined);
  await admin.end();
});

function driverOn(node: number, connectionLimit = 8): MysqlDriver {
  const driver = createMysqlDriver({ url: urls[node] as string, connectionLimit });
  drivers.push(driver);
  return driver;
}

async function createTable(form: "lease" | "rowLock" | "advisory"): Promise<TableDefinition> {
  const name = uniqueName(`galera_${form}`);
  tables.push(name);
  await admin.query(
    `CREATE TABLE ${quote(name)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL, attempt INT NOT NULL DEFAULT 1, run_at DATETIME(6) NULL, account VARCHAR(64) NULL${form === "lease" ? ", locked_until DATETIME NULL" : ""}, KEY claim_order (run_at, id)) ENGINE=InnoDB`,
  );
  return defineTable({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      ...(form === "lease" ? { lockedUntil: "locked_until" } : {}),
    },
    extraColumns: ["account"],
    ...(form === "advisory" ? { advisoryLock: `${name}-{account}` } : {}),
    ...(form === "lease" ? { lease: 10 } : {}),
  });
}

/** Counts the table's rows on node 1 with a causal read (wsrep_sync_wait): it sees every node's commits. */
async function count(table: TableDefinition): Promise<number> {
  const connection = await admin.getConnection();
  try {
    await connection.query("SET SESSION wsrep_sync_wait = 1");
    const [rows] = await connection.query(`SELECT COUNT(*) AS n FROM ${quote(table.name)}`);
    return Number((rows as { n: number }[])[0]?.n);
  } finally {
    connection.release();
  }
}

describe.skipIf(!enabled)("on a three-node Galera cluster the startup probe finds the cluster", () => {
  it.each(["rowLock", "advisory"] as const)(
    "the %s form is refused at subscribe with PROBE_FAILED (multiMaster), on every node",
    async (form) => {
      const table = await createTable(form);
      for (const node of [0, 1, 2]) {
        const driver = driverOn(node, 4);
        const broker = createBroker({ driver, logger: silentLogger });
        const refused = await broker
          .subscribe(table, () => ack())
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        expect(BrokerError.is(refused, "PROBE_FAILED")).toBe(true);
        expect((refused as { probe?: string }).probe).toBe("multiMaster");
        expect(driver.detected().multiMaster).toBe(true);
      }
    },
  );

  it("the main MariaDB (not a cluster node) is not reported as one", async () => {
    const driver = createMysqlDriver({
      url: process.env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test",
    });
    drivers.push(driver);
    const name = uniqueName("galera_single");
    const single = createPool({ uri: process.env.ROWCLAIM_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test" });
    await single.query(
      `CREATE TABLE ${quote(name)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload JSON NOT NULL, attempt INT NOT NULL DEFAULT 1, run_at DATETIME(6) NULL) ENGINE=InnoDB`,
    );
    try {
      const table = defineTable({
        name,
        columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at" },
      });
      const broker = createBroker({ driver, logger: silentLogger });
      await broker.subscribe(table, () => ack());
      expect(driver.detected().multiMaster).toBe(false);
      await broker.close();
    } finally {
      await single.query(`DROP TABLE IF EXISTS ${quote(name)}`);
      await single.end();
    }
  });
});

describe.skipIf(!enabled)(
  "on a three-node Galera cluster the lease form drains one table from every node",
  () => {
    it("3 subscribers (one per node) × 4 workers drain 3,000 rows: 0 lost, 0 settled twice", async () => {
      const table = await createTable("lease");
      const total = 3000;
      // Publish through every node, so that rows (and their auto-increment ids) come from all three.
      for (const node of [0, 1, 2]) {
        const publisher = createBroker({ driver: driverOn(node, 2), logger: silentLogger });
        for (let start = node * 1000; start < (node + 1) * 1000; start += 250) {
          await publisher.publishMany(
            table,
            Array.from({ length: 250 }, (_, k) => ({ payload: { n: start + k } })),
          );
        }
      }
      expect(await count(table)).toBe(total);

      const deliveries = new Map<number, number>();
      const subscriptions: Subscription[] = [];
      // Claims that lost certification five times running are logged and tried again; count their errors.
      const claimErrors = new Map<string, number>();
      const logger = {
        warn() {},
        error(_message: string, details?: Readonly<Record<string, unknown>>) {
          const error = (details?.err ?? details?.error) as
            | { code?: string; errno?: number; cause?: { errno?: number } }
            | undefined;
          const key = `${error?.code ?? "?"}/${error?.cause?.errno ?? error?.errno ?? "?"}`;
          claimErrors.set(key, (claimErrors.get(key) ?? 0) + 1);
        },
      };
      const brokers = [0, 1, 2].map((node) => createBroker({ driver: driverOn(node, 8), logger }));
      const started = performance.now();
      for (const broker of brokers) {
        subscriptions.push(
          await broker.subscribe(
            table,
            (delivery) => {
              const n = (delivery.payload as { n: number }).n;
              deliveries.set(n, (deliveries.get(n) ?? 0) + 1);
              return ack();
            },
            { workers: 4, pollInterval: 50 },
          ),
        );
      }
      // Wait for the table to be empty (every row settled), polling the database.
      const deadline = Date.now() + 240_000;
      while ((await count(table)) > 0) {
        if (Date.now() > deadline) throw new Error(`rows left: ${await count(table)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const seconds = (performance.now() - started) / 1000;
      await Promise.all(brokers.map((broker) => broker.close()));

      const acked = subscriptions.reduce((sum, subscription) => sum + subscription.stats.acked, 0);
      const settleErrors = subscriptions.reduce(
        (sum, subscription) => sum + subscription.stats.settleErrors,
        0,
      );
      const redelivered = [...deliveries.values()].filter((times) => times > 1).length;
      console.log(
        `[galera] 3,000 rows over 3 nodes × 4 workers in ${seconds.toFixed(1)} s: acked ${acked}, per node ${subscriptions.map((s) => s.stats.acked).join("/")}, settlement errors ${settleErrors}, redelivered rows ${redelivered}, claim errors ${subscriptions.reduce((sum, s) => sum + s.stats.claimErrors, 0)} (${[...claimErrors].map(([key, n]) => `${key}: ${n}`).join(", ") || "none"})`,
      );
      // 0 lost: every published row was delivered and the table is empty.
      expect(deliveries.size).toBe(total);
      // 0 settled twice: exactly one successful settlement per row.
      expect(acked).toBe(total);
      // Every node took part.
      for (const subscription of subscriptions) expect(subscription.stats.acked).toBeGreaterThan(0);
    }, 300_000);
  },
);

// Without ROWCLAIM_CLUSTER_TESTS=1 the report shows one skipped test that says how to run them;
// with it, nothing here is skipped.
if (!enabled) {
  describe("the Galera tests", () => {
    it.skip("run with ROWCLAIM_CLUSTER_TESTS=1 (see the file's header)", () => {});
  });
}
