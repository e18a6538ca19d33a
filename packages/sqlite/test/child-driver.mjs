// The conformance suite's childDriverModule: a child `node` process imports this file and calls
// createDriver(), which opens the database file the parent named in ROWCLAIM_SQLITE_FILE.
import { createSqliteDriver } from "@rowclaim/sqlite";

export function createDriver() {
  const filename = process.env.ROWCLAIM_SQLITE_FILE;
  if (filename === undefined || filename === "")
    throw new Error("Set ROWCLAIM_SQLITE_FILE to the database file.");
  return createSqliteDriver({ filename });
}

// For the transactional handler tests: SQLite transactional bodies run synchronously.
export const transactionBodies = "sync";

// Writes one side-table row with the client a transactional body receives (the better-sqlite3
// Database, inside the delivery's IMMEDIATE transaction), synchronously.
export function insertSideRow(db, table, job, worker) {
  db.prepare(`INSERT INTO "${table}" (job, worker) VALUES (?, ?)`).run(job, worker);
}
