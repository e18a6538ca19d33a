/**
 * The command line's own SQLite connection (an {@link AdminConnection} on better-sqlite3), in a
 * module of its own so that better-sqlite3 is loaded only when a command uses SQLite.
 *
 * @module
 */
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import type { AdminConnection, SqlRow } from "./admin-connection.js";

/** Opens `filename`; read-only, a file that does not exist is refused instead of created. */
export async function openSqlite(filename: string, readOnly: boolean): Promise<AdminConnection> {
  if (readOnly && filename !== ":memory:" && !existsSync(filename)) {
    throw new Error(`The SQLite file ${filename} does not exist.`);
  }
  const db = readOnly
    ? new Database(filename, { readonly: true, fileMustExist: true })
    : new Database(filename);
  db.pragma("busy_timeout = 5000");
  return {
    dialect: "sqlite",
    async execute(sql) {
      db.exec(sql);
    },
    async query(sql, params = []) {
      const statement = db.prepare(sql);
      if (!statement.reader) {
        statement.run(...params);
        return [];
      }
      return statement.all(...params) as SqlRow[];
    },
    async close() {
      db.close();
    },
  };
}
