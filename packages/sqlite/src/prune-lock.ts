/**
 * The prune lock of the SQLite driver: one prune of a table at a time. In the process, a set of
 * the tables being pruned (kept on `globalThis`, so every driver on a file shares it); across
 * processes, a companion file beside the database (`<file>-rowclaim-prune`) held under an
 * exclusive transaction (`BEGIN EXCLUSIVE`) for as long as the prune runs. The operating system
 * drops that file lock when the process ends however it ends, so a crashed prune never leaves
 * the lock behind. Across processes the lock covers the whole file: two processes never prune
 * at once, whatever the tables.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type { PruneLock } from "@rowclaim/core/driver";
import Database from "better-sqlite3";
import type { SqliteDatabase } from "./database.js";
import { databaseFileKey } from "./keys.js";

const registrySymbol = Symbol.for("rowclaim.sqlite.pruning");

function pruning(): Set<string> {
  const holder = globalThis as { [registrySymbol]?: Set<string> };
  holder[registrySymbol] ??= new Set();
  return holder[registrySymbol];
}

/** Takes the prune lock of `table` on `db` without waiting; `null` when a prune of it (or, in another process, of the file) runs. */
export function lockPrune(db: SqliteDatabase, table: TableDefinition): PruneLock | null {
  const isPrivate = db.memory || db.name === "" || db.name === ":memory:";
  const file = isPrivate ? undefined : databaseFileKey(db.name);
  const name = JSON.stringify([file ?? db.name, table.schema ?? null, table.name]);
  const names = pruning();
  if (names.has(name)) return null;
  let companion: Database.Database | undefined;
  if (file !== undefined) {
    companion = new Database(`${file}-rowclaim-prune`, { timeout: 0 });
    try {
      companion.exec("BEGIN EXCLUSIVE");
    } catch (error) {
      companion.close();
      const code = (error as { code?: unknown }).code;
      if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") return null;
      throw error;
    }
  }
  names.add(name);
  const held = companion;
  return {
    async release() {
      names.delete(name);
      if (held === undefined) return;
      try {
        held.exec("ROLLBACK");
      } finally {
        held.close();
      }
    },
  };
}
