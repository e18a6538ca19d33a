/**
 * One process per database file in the advisory lock form. Advisory keys live in the process
 * (`keys.ts`), so a second process on the file would run the same rows again. The first advisory
 * subscription of a process on a file therefore holds `BEGIN EXCLUSIVE` on a companion database
 * beside it (`<file>-rowclaim-advisory`, never deleted, always empty) while the process has
 * advisory subscriptions on the file. The operating system drops that file lock when the process
 * ends, however it ends, so another process can take over at once; until then its advisory
 * subscriptions are refused with `UnsupportedFormError`, naming the lease form. Every driver of
 * the process on the file shares the ownership, counted by subscription.
 *
 * @module
 */
import { type TableDefinition, UnsupportedFormError } from "@rowclaim/core";
import Database from "better-sqlite3";
import type { SqliteDatabase } from "./database.js";
import { databaseFileKey, isPrivate, processRegistry } from "./keys.js";

/** Opens the companion database `file` and holds `BEGIN EXCLUSIVE` on it without waiting; `held(error)` when another connection holds it. */
export function lockCompanion<T>(file: string, held: (error: unknown) => T): Database.Database | T {
  const lock = new Database(file, { timeout: 0 });
  try {
    lock.exec("BEGIN EXCLUSIVE");
    return lock;
  } catch (error) {
    lock.close();
    const code = (error as { code?: unknown }).code;
    if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") return held(error);
    throw error;
  }
}

/** Gives up a lock {@link lockCompanion} took, and closes its connection. */
export function unlockCompanion(lock: Database.Database): void {
  try {
    lock.exec("ROLLBACK");
  } finally {
    lock.close();
  }
}

interface Ownership {
  readonly lock: Database.Database;
  holders: number;
}

const owners = (): Map<string, Ownership> => processRegistry("advisoryOwners", () => new Map());

/** A held share of this process's ownership of a file's advisory form; {@link AdvisoryOwnership.release} gives it back once. */
export interface AdvisoryOwnership {
  release(): void;
}

/**
 * Takes (or shares) this process's ownership of the advisory form on `db`'s file. A private
 * database (in memory, temporary) needs none: no other process can open it.
 *
 * @throws {UnsupportedFormError} another process owns the file's advisory form.
 */
export function ownAdvisoryForm(db: SqliteDatabase, table: TableDefinition): AdvisoryOwnership {
  if (isPrivate(db)) return { release: () => undefined };
  const file = `${databaseFileKey(db.name)}-rowclaim-advisory`;
  const registry = owners();
  let held = registry.get(file);
  if (held === undefined) {
    const lock = lockCompanion(file, (cause) => {
      throw new UnsupportedFormError(
        `Table "${table.name}" takes the advisory lock form, and another process already runs advisory lock subscriptions on the database file "${db.name}". SQLite keeps advisory keys in the process, so two processes on one file would run the same rows: one process at a time may use the form on a file (this one can take over when the other ends). To run several processes on one file, use the lease form (name a columns.lockedUntil column).`,
        { table: table.name, cause },
      );
    });
    held = { lock, holders: 0 };
    registry.set(file, held);
  }
  const ownership = held;
  ownership.holders += 1;
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      ownership.holders -= 1;
      if (ownership.holders > 0) return;
      registry.delete(file);
      unlockCompanion(ownership.lock);
    },
  };
}

/**
 * Whether another process owns `db`'s file's advisory form now (its keys are then invisible
 * here): asked without waiting, and without keeping the lock.
 */
export function advisoryOwnedElsewhere(db: SqliteDatabase): boolean {
  if (isPrivate(db)) return false;
  const file = `${databaseFileKey(db.name)}-rowclaim-advisory`;
  if (owners().has(file)) return false;
  const probe = lockCompanion(file, () => null);
  if (probe === null) return true;
  unlockCompanion(probe);
  return false;
}
