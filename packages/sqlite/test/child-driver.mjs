// The conformance suite's childDriverModule: a child `node` process imports this file and calls
// createDriver(), which opens the database file the parent named in ROWCLAIM_SQLITE_FILE.
import { createSqliteDriver } from "@rowclaim/sqlite";

export function createDriver() {
  const filename = process.env.ROWCLAIM_SQLITE_FILE;
  if (filename === undefined || filename === "")
    throw new Error("Set ROWCLAIM_SQLITE_FILE to the database file.");
  return createSqliteDriver({ filename });
}
