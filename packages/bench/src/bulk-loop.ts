/**
 * The database's own ceiling on PostgreSQL: a hand-written bulk loop, the fastest honest loop of
 * a lease queue's statements. Each of `workers` loops claims up to {@link BULK_CLAIM} rows with one
 * `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED LIMIT n) RETURNING` (the lease written
 * and the attempt counted, as a lease claim does), runs the handler on every row at once, and
 * settles all of them with one fenced `DELETE … USING unnest(ids, tokens)` (a row is deleted only
 * while it still holds the lease the claim wrote). Two statements and two commits per claim of
 * up to 500 rows, autocommitted, on a pool of the loops' own: nothing a queue library could cut
 * without giving up the lease's fence.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";
import pg from "pg";
import { type Contender, chunks, payloads } from "./contender.js";
import { benchTable } from "./rowclaim.js";
import { type HandlerKind, handlerOf } from "./work.js";

/** Rows one claim of the bulk loop takes (graphile-worker's tuned local queue holds as many). */
export const BULK_CLAIM = 500;

/** The lease a bulk claim writes: long enough that no row is taken back during a drain. */
const LEASE_MS = 60_000;

/** The bench table's DDL as rowclaim's PostgreSQL driver writes it (a driver opened only for that). */
async function schemaSqlOf(url: string, table: TableDefinition): Promise<string> {
  const driver = createPostgresDriver({ url, max: 1 });
  try {
    return driver.schemaSql(table);
  } finally {
    await driver.close();
  }
}

/** The hand-written bulk loop on the PostgreSQL database at `url`. */
export function bulkLoopPostgres(url: string, poolSize: number, handler: HandlerKind): Contender {
  const table = benchTable("rowclaim_wsbench_bulk_loop", "lease");
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on("error", (error) => process.stderr.write(`[bulk loop pool] ${error.message}\n`));
  const run = handlerOf(handler);
  const t = `"${table.name}"`;
  let schema: string | undefined;
  const claim = `UPDATE ${t} SET "locked_until" = $2, "attempt" = "attempt" + 1 WHERE "id" IN (SELECT "id" FROM ${t} WHERE ("run_at" IS NULL OR "run_at" <= $1) AND ("locked_until" IS NULL OR "locked_until" <= $1) ORDER BY "priority", "run_at" NULLS FIRST, "id" LIMIT ${BULK_CLAIM} FOR UPDATE SKIP LOCKED) RETURNING "id", "payload", "locked_until"`;
  const settle = `DELETE FROM ${t} USING unnest($1::bigint[], $2::timestamptz[]) AS "s"("id", "token") WHERE ${t}."id" = "s"."id" AND ${t}."locked_until" = "s"."token"`;
  const loop = async (): Promise<number> => {
    let settled = 0;
    for (;;) {
      const now = new Date();
      const claimed = await pool.query<{ id: string; payload: unknown; locked_until: Date }>({
        name: "bulk-claim",
        text: claim,
        values: [now, new Date(now.getTime() + LEASE_MS)],
      });
      if (claimed.rows.length === 0) return settled;
      await Promise.all(claimed.rows.map((row) => run(row.payload)));
      const deleted = await pool.query({
        name: "bulk-settle",
        text: settle,
        values: [claimed.rows.map((row) => row.id), claimed.rows.map((row) => row.locked_until)],
      });
      settled += deleted.rowCount ?? 0;
    }
  };
  return {
    id: "bulk-loop-pg",
    label: "hand-written bulk loop (ceiling)",
    database: "postgres",
    settings: `workers loops, each: claim ${BULK_CLAIM} (UPDATE … FOR UPDATE SKIP LOCKED … RETURNING), ${handler} handler on every row, one fenced DELETE … USING unnest(ids, tokens)`,
    async fill(jobs) {
      await pool.query(`DROP TABLE IF EXISTS ${t}`);
      // The bench tables' layout and claim-order index, as rowclaim's schema helper writes them.
      schema ??= await schemaSqlOf(url, table);
      await pool.query(schema);
      for (const part of chunks(payloads(jobs), 1000)) {
        await pool.query(`INSERT INTO ${t} ("payload") SELECT * FROM unnest($1::jsonb[])`, [
          part.map((payload) => JSON.stringify(payload)),
        ]);
      }
    },
    async drain(workers) {
      const start = performance.now();
      const counts = await Promise.all(Array.from({ length: workers }, () => loop()));
      const ms = performance.now() - start;
      return { ms, done: counts.reduce((sum, count) => sum + count, 0) };
    },
    async close() {
      await pool.query(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
      await pool.end();
    },
  };
}
