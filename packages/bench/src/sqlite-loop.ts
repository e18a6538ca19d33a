/**
 * The hand-written one-row loop on SQLite, beside rowclaim's SQLite lease form at the same
 * durability. It is the command line's loop (`rowclaim/bench`, the loop `rowclaim bench` runs), on
 * a new file for every drain laid out as rowclaim's SQLite driver lays out the lease table:
 * `workers` loops on one better-sqlite3 connection (WAL, the `synchronous` level given), each
 * taking one row with the lease claim (`UPDATE … SET locked_until, attempt + 1 WHERE id IN (SELECT
 * … LIMIT 1) RETURNING`), awaiting the handler and deleting the row while it still holds that
 * lease. Two autocommitted statements a job, so two commits; each prepared once per drain.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type HandWrittenLoop, openHandWrittenLoop } from "rowclaim/bench";
import { benchTable, fillSqliteFile, type SqliteSync } from "./bench-table.js";
import type { Contender } from "./contender.js";

/** The hand-written SQLite lease loop (the command line's) at `synchronous`. */
export function sqliteLoop(synchronous: SqliteSync, maxWorkers: number): Contender {
  const directory = mkdtempSync(join(tmpdir(), "rowclaim-wsbench-loop-"));
  const table = benchTable("rowclaim_wsbench_loop", "lease");
  let round = 0;
  let loop: HandWrittenLoop | undefined;
  return {
    id: `sqlite-loop-${synchronous}`,
    label: `hand-written loop (${synchronous.toUpperCase()})`,
    database: "sqlite",
    settings: `rowclaim bench's SQLite lease loop: WAL, synchronous = ${synchronous.toUpperCase()}, one row a claim: UPDATE … RETURNING, the handler, fenced DELETE; two commits a job`,
    async fill(jobs) {
      await loop?.close();
      round += 1;
      const file = join(directory, `loop-${round}.db`);
      await fillSqliteFile(file, table, synchronous, jobs);
      loop = await openHandWrittenLoop(
        { dialect: "sqlite", filename: file },
        { table, form: "lease", connections: maxWorkers, synchronous },
      );
    },
    async drain(workers, _jobs, run) {
      const open = loop as HandWrittenLoop;
      const done = await open.drain(workers, run.handler, () => run.claiming());
      run.settled();
      return done;
    },
    async close() {
      await loop?.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
