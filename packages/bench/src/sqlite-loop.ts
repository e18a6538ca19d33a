/**
 * The hand-written loop on SQLite, beside rowclaim's SQLite lease form at the same durability:
 * `workers` loops on one better-sqlite3 connection of their own (WAL, the `synchronous` level
 * given), each taking one row with the lease claim's statement (`UPDATE … SET locked_until,
 * attempt + 1 WHERE id IN (SELECT … LIMIT 1) RETURNING`), awaiting the handler, and deleting the
 * row while it still holds that lease. Two autocommitted statements a job, so two commits: what a
 * lease queue on SQLite does without batching, prepared once, with nothing else on the path.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { type Contender, chunks, payloads } from "./contender.js";
import { type HandlerKind, handlerOf } from "./work.js";

/** SQLite's `synchronous` levels the benchmark runs at (the driver's default is `"full"`). */
export type SqliteSync = "full" | "normal";

const LEASE_MS = 60_000;

/** The hand-written SQLite lease loop at `synchronous`. */
export function sqliteLoop(synchronous: SqliteSync, handler: HandlerKind): Contender {
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-wsbench-loop-"));
  const run = handlerOf(handler);
  let round = 0;
  let db: Database.Database | undefined;
  return {
    id: `sqlite-loop-${synchronous}`,
    label: `hand-written loop (${synchronous.toUpperCase()})`,
    database: "sqlite",
    settings: `WAL, synchronous = ${synchronous.toUpperCase()}, one row a claim: UPDATE … RETURNING, ${handler} handler, fenced DELETE`,
    async fill(jobs) {
      db?.close();
      round += 1;
      db = new Database(join(directory, `loop-${round}.db`));
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
      db.exec(`CREATE TABLE "jobs" ("id" INTEGER PRIMARY KEY, "payload" TEXT NOT NULL, "attempt" INTEGER NOT NULL DEFAULT 1,
        "run_at" INTEGER, "priority" INTEGER NOT NULL DEFAULT 0, "locked_until" INTEGER);
        CREATE INDEX "jobs_claim_order" ON "jobs" ("priority", "run_at", "id");`);
      const insert = db.prepare(`INSERT INTO "jobs" ("payload") VALUES (?)`);
      const database = db;
      for (const part of chunks(payloads(jobs), 1000)) {
        database.transaction(() => {
          for (const payload of part) insert.run(JSON.stringify(payload));
        })();
      }
    },
    async drain(workers) {
      const database = db as Database.Database;
      const claim = database.prepare(
        `UPDATE "jobs" SET "locked_until" = @expiry, "attempt" = "attempt" + 1 WHERE "id" IN (SELECT "id" FROM "jobs" WHERE ("run_at" IS NULL OR "run_at" <= @now) AND ("locked_until" IS NULL OR "locked_until" <= @now) ORDER BY "priority", "run_at", "id" LIMIT 1) RETURNING "id", "payload", "locked_until"`,
      );
      const settle = database.prepare(`DELETE FROM "jobs" WHERE "id" = @id AND "locked_until" = @token`);
      let settled = 0;
      const loop = async (): Promise<void> => {
        for (;;) {
          const now = Date.now();
          const row = claim.get({ now, expiry: now + LEASE_MS }) as
            | { id: number; payload: string; locked_until: number }
            | undefined;
          if (row === undefined) return;
          await run(row.payload);
          settled += settle.run({ id: row.id, token: row.locked_until }).changes;
        }
      };
      const start = performance.now();
      await Promise.all(Array.from({ length: workers }, () => loop()));
      return { ms: performance.now() - start, done: settled };
    },
    async close() {
      db?.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
