import { createSqliteDriver } from "../../sqlite/dist/index.js";
export function createDriver() {
  return createSqliteDriver({ filename: process.env.SCRATCH_SQLITE_FILE });
}
