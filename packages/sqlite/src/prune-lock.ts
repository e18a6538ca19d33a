/**
 * The prune lock of the SQLite driver: one prune of a table at a time. In the process, a set of
 * the tables being pruned (on `globalThis`, shared by every driver); across processes, a
 * companion file beside the database (`<file>-rowclaim-prune`) held under `BEGIN EXCLUSIVE` while
 * the prune runs (as `advisory-owner.ts` does), which covers the whole file: two processes never
 * prune at once, whatever the tables.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type { PruneLock } from "@rowclaim/core/driver";
import { lockCompanion, unlockCompanion } from "./advisory-owner.js";
import type { SqliteDatabase } from "./database.js";
import { databaseFileKey, isPrivate, processRegistry } from "./keys.js";

/** Takes the prune lock of `table` on `db` without waiting; `null` when a prune of it (or, in another process, of the file) runs. */
export function lockPrune(db: SqliteDatabase, table: TableDefinition): PruneLock | null {
  const file = isPrivate(db) ? undefined : databaseFileKey(db.name);
  const name = JSON.stringify([file ?? db.name, table.schema ?? null, table.name]);
  const names = processRegistry("pruning", () => new Set<string>());
  if (names.has(name)) return null;
  const held = file === undefined ? undefined : lockCompanion(`${file}-rowclaim-prune`, () => null);
  if (held === null) return null;
  names.add(name);
  return {
    async release() {
      names.delete(name);
      if (held !== undefined) unlockCompanion(held);
    },
  };
}
