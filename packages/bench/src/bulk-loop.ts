/**
 * The database's own ceiling: a hand-written bulk loop per database, the fastest honest loop of a
 * lease queue's statements. Each of `workers` loops claims up to {@link BULK_CLAIM} rows at once
 * (the lease written and the attempt counted, as a lease claim does), runs the handler on every row
 * at once, and settles all of them with one fenced delete (a row goes only while it still holds
 * the lease the claim wrote). One claim and one settlement per 500 rows, on the same table layout
 * and claim-order index as rowclaim's tables (each driver's `schemaSql`): a queue library can only
 * add work to this, so it is the ceiling rowclaim's `prefetch` is measured against.
 *
 * - PostgreSQL: `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED LIMIT n) RETURNING`, then
 *   `DELETE … USING unnest(ids, tokens)`; named (prepared) statements, autocommitted: two
 *   statements and two commits a claim.
 * - MariaDB/MySQL: `START TRANSACTION`, `SELECT … FOR UPDATE SKIP LOCKED LIMIT n` on the
 *   claim-order index, `UPDATE … WHERE id IN (…)`, `COMMIT` (MariaDB has no `UPDATE … RETURNING`),
 *   then one `DELETE … WHERE id IN (…) AND locked_until = token`: two commits a claim.
 * - SQLite: one connection (WAL, the `synchronous` level given), `UPDATE … WHERE id IN (SELECT …
 *   LIMIT n) RETURNING`, then `DELETE … WHERE id IN (SELECT value FROM json_each(ids)) AND
 *   locked_until = token`, each prepared once and autocommitted: two commits a claim.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TableDefinition } from "@rowclaim/core";
import { createMysqlDriver } from "@rowclaim/mysql";
import { createPostgresDriver } from "@rowclaim/postgres";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import pg from "pg";
import { benchTable, fillSqliteFile, type SqliteSync } from "./bench-table.js";
import { type Contender, chunks, type DrainRun, payloads } from "./contender.js";

/** Rows one claim of the bulk loop takes (graphile-worker's tuned local queue holds as many). */
export const BULK_CLAIM = 500;

/** The lease a bulk claim writes: long enough that no row is taken back during a drain. */
const LEASE_MS = 60_000;

/** Runs `workers` copies of `loop` at once from the run's first claim; resolves the rows they settled, and marks the run settled. */
async function runBulk(workers: number, run: DrainRun, loop: () => Promise<number>): Promise<number> {
  run.claiming();
  const counts = await Promise.all(Array.from({ length: workers }, () => loop()));
  run.settled();
  return counts.reduce((sum, count) => sum + count, 0);
}

/** The hand-written bulk loop on the PostgreSQL database at `url`. */
export function bulkLoopPostgres(url: string, poolSize: number): Contender {
  const table = benchTable("rowclaim_wsbench_bulk_loop", "lease");
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on("error", (error) => process.stderr.write(`[bulk loop pool] ${error.message}\n`));
  const t = `"${table.name}"`;
  let schema: string | undefined;
  const claim = `UPDATE ${t} SET "locked_until" = $2, "attempt" = "attempt" + 1 WHERE "id" IN (SELECT "id" FROM ${t} WHERE ("run_at" IS NULL OR "run_at" <= $1) AND ("locked_until" IS NULL OR "locked_until" <= $1) ORDER BY "priority", "run_at" NULLS FIRST, "id" LIMIT ${BULK_CLAIM} FOR UPDATE SKIP LOCKED) RETURNING "id", "payload", "locked_until"`;
  const settle = `DELETE FROM ${t} USING unnest($1::bigint[], $2::timestamptz[]) AS "s"("id", "token") WHERE ${t}."id" = "s"."id" AND ${t}."locked_until" = "s"."token"`;
  return {
    id: "bulk-loop-pg",
    label: "hand-written bulk loop (ceiling)",
    database: "postgres",
    settings: `workers loops, each: claim ${BULK_CLAIM} (UPDATE … FOR UPDATE SKIP LOCKED … RETURNING), the handler on every row, one fenced DELETE … USING unnest(ids, tokens)`,
    async fill(jobs) {
      await pool.query(`DROP TABLE IF EXISTS ${t}`);
      if (schema === undefined) {
        const driver = createPostgresDriver({ url, max: 1 });
        schema = driver.schemaSql(table);
        await driver.close();
      }
      await pool.query(schema);
      for (const part of chunks(payloads(jobs), 1000)) {
        await pool.query(`INSERT INTO ${t} ("payload") SELECT * FROM unnest($1::jsonb[])`, [
          part.map((payload) => JSON.stringify(payload)),
        ]);
      }
    },
    drain(workers, _jobs, run) {
      return runBulk(workers, run, async () => {
        let settled = 0;
        for (;;) {
          const now = new Date();
          const claimed = await pool.query<{ id: string; payload: unknown; locked_until: Date }>({
            name: "bulk-claim",
            text: claim,
            values: [now, new Date(now.getTime() + LEASE_MS)],
          });
          if (claimed.rows.length === 0) return settled;
          await Promise.all(claimed.rows.map((row) => run.handler(row.payload)));
          const deleted = await pool.query({
            name: "bulk-settle",
            text: settle,
            values: [claimed.rows.map((row) => row.id), claimed.rows.map((row) => row.locked_until)],
          });
          settled += deleted.rowCount ?? 0;
        }
      });
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
      await pool.end();
    },
  };
}

/** The hand-written bulk loop on the MariaDB/MySQL database at `url`. */
export function bulkLoopMysql(url: string, poolSize: number): Contender {
  const table: TableDefinition = benchTable("rowclaim_wsbench_bulk_loop", "lease");
  const pool = mysql.createPool({
    uri: url,
    connectionLimit: poolSize,
    timezone: "Z",
    supportBigNumbers: true,
    multipleStatements: true,
  });
  const t = `\`${table.name}\``;
  const index = `\`${table.name}_claim_order\``;
  const select = `SELECT \`id\`, \`payload\` FROM ${t} FORCE INDEX (${index}) WHERE (\`run_at\` IS NULL OR \`run_at\` <= ?) AND (\`locked_until\` IS NULL OR \`locked_until\` <= ?) ORDER BY \`priority\`, \`run_at\`, \`id\` LIMIT ${BULK_CLAIM} FOR UPDATE SKIP LOCKED`;
  let schema: string | undefined;
  return {
    id: "bulk-loop-mysql",
    label: "hand-written bulk loop (ceiling)",
    database: "mysql",
    settings: `workers loops, each on its own connection (READ COMMITTED): claim ${BULK_CLAIM} (SELECT … FOR UPDATE SKIP LOCKED, UPDATE … WHERE id IN, COMMIT), the handler on every row, one fenced DELETE … WHERE id IN (…) AND locked_until = token`,
    async fill(jobs) {
      await pool.query(`DROP TABLE IF EXISTS ${t}`);
      if (schema === undefined) {
        const driver = createMysqlDriver({ url, connectionLimit: 1 });
        schema = driver.schemaSql(table);
        await driver.close();
      }
      await pool.query(schema);
      for (const part of chunks(payloads(jobs), 1000)) {
        await pool.query(`INSERT INTO ${t} (\`payload\`) VALUES ?`, [
          part.map((payload) => [JSON.stringify(payload)]),
        ]);
      }
    },
    async drain(workers, _jobs, run) {
      const connections = await Promise.all(Array.from({ length: workers }, () => pool.getConnection()));
      try {
        for (const connection of connections)
          await connection.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
        let next = 0;
        return await runBulk(workers, run, async () => {
          const connection = connections[next++] as mysql.PoolConnection;
          let settled = 0;
          for (;;) {
            const now = new Date();
            // Whole milliseconds, as DATETIME(6) keeps them exactly.
            const token = new Date(now.getTime() + LEASE_MS);
            const rows = await againOnDeadlock(connection, async () => {
              await connection.query("START TRANSACTION");
              const [claimed] = await connection.query<mysql.RowDataPacket[]>(select, [now, now]);
              if (claimed.length > 0) {
                await connection.query(
                  `UPDATE ${t} SET \`locked_until\` = ?, \`attempt\` = \`attempt\` + 1 WHERE \`id\` IN (?)`,
                  [token, claimed.map((row) => row.id)],
                );
              }
              await connection.query("COMMIT");
              return claimed;
            });
            if (rows.length === 0) return settled;
            await Promise.all(rows.map((row) => run.handler(row.payload)));
            const [deleted] = await againOnDeadlock(connection, () =>
              connection.query<mysql.ResultSetHeader>(
                `DELETE FROM ${t} WHERE \`id\` IN (?) AND \`locked_until\` = ?`,
                [rows.map((row) => row.id), token],
              ),
            );
            settled += deleted.affectedRows;
          }
        });
      } finally {
        for (const connection of connections) connection.release();
      }
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
      await pool.end();
    },
  };
}

/**
 * Runs `step` again after InnoDB chose it as a deadlock's victim (errno 1213: the transaction was
 * rolled back, nothing of it committed), as any loop of these statements on MariaDB must: a batch
 * claim and a batch delete beside each other's can deadlock on the claim-order index.
 */
async function againOnDeadlock<T>(connection: mysql.PoolConnection, step: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await step();
    } catch (error) {
      if ((error as { errno?: unknown }).errno !== 1213) throw error;
      await connection.query("ROLLBACK");
    }
  }
}

/** The hand-written bulk loop on a SQLite file at `synchronous` (a new file every drain). */
export function bulkLoopSqlite(synchronous: SqliteSync): Contender {
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-wsbench-bulk-"));
  const table = benchTable("rowclaim_wsbench_bulk_loop", "lease");
  const t = `"${table.name}"`;
  let round = 0;
  let db: Database.Database | undefined;
  return {
    id: `bulk-loop-sqlite-${synchronous}`,
    label: `hand-written bulk loop (ceiling, ${synchronous.toUpperCase()})`,
    database: "sqlite",
    settings: `one connection, WAL, synchronous = ${synchronous.toUpperCase()}; workers loops, each: claim ${BULK_CLAIM} (UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING), the handler on every row, one fenced DELETE … WHERE id IN (json_each) AND locked_until = token`,
    async fill(jobs) {
      db?.close();
      round += 1;
      const file = join(directory, `bulk-${round}.db`);
      await fillSqliteFile(file, table, synchronous, jobs);
      db = new Database(file);
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
    },
    drain(workers, _jobs, run) {
      const database = db as Database.Database;
      const claim = database.prepare(
        `UPDATE ${t} SET "locked_until" = @expiry, "attempt" = "attempt" + 1 WHERE "id" IN (SELECT "id" FROM ${t} WHERE ("run_at" IS NULL OR "run_at" <= @now) AND ("locked_until" IS NULL OR "locked_until" <= @now) ORDER BY "priority", "run_at", "id" LIMIT ${BULK_CLAIM}) RETURNING "id", "payload"`,
      );
      const settle = database.prepare(
        `DELETE FROM ${t} WHERE "id" IN (SELECT "value" FROM json_each(@ids)) AND "locked_until" = @token`,
      );
      return runBulk(workers, run, async () => {
        let settled = 0;
        for (;;) {
          const now = Date.now();
          const expiry = now + LEASE_MS;
          const rows = claim.all({ now, expiry }) as { id: number; payload: string }[];
          if (rows.length === 0) return settled;
          await Promise.all(rows.map((row) => run.handler(row.payload)));
          settled += settle.run({ ids: JSON.stringify(rows.map((row) => row.id)), token: expiry }).changes;
        }
      });
    },
    async close() {
      db?.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
