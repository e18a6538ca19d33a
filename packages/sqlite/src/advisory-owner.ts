/**
 * One process per database file in the advisory lock form. SQLite has no advisory locks, so the
 * driver keeps advisory keys in the process (`keys.ts`); a second process on the same file would
 * not see them and would run the same rows again. To make that impossible rather than likely,
 * the first advisory subscription of a process on a file takes ownership of the file's advisory
 * form: it opens a small companion database beside the file (`<file>-rowclaim-advisory`) and holds
 * an exclusive transaction on it (`BEGIN EXCLUSIVE`) for as long as the process has advisory
 * subscriptions on the file. SQLite's file lock is the operating system's: it holds across
 * processes (and across containers sharing the file) and the operating system drops it when the
 * process ends, however it ends (a crash or SIGKILL included), so a second process can take over
 * at once.
 *
 * A second process's advisory subscription on the same file is refused with
 * `UnsupportedFormError` naming the fix: the lease form, which any number of processes share.
 * The companion file is never deleted (deleting a file another process has open would let two
 * processes hold "the" lock on two files); it stays empty.
 *
 * Within one process every driver on the file shares the ownership (a registry kept on
 * `globalThis`, like the keys), counted by subscription: the last one to close gives it up.
 *
 * @module
 */
import { type TableDefinition, UnsupportedFormError } from "@rowclaim/core";
import Database from "better-sqlite3";
import type { SqliteDatabase } from "./database.js";
import { databaseFileKey } from "./keys.js";

/** The companion file whose exclusive lock marks a file's advisory owner. */
export function ownerFileOf(databaseFile: string): string {
  return `${databaseFileKey(databaseFile)}-rowclaim-advisory`;
}

interface Ownership {
  readonly lock: Database.Database;
  holders: number;
}

const registrySymbol = Symbol.for("rowclaim.sqlite.advisoryOwners");

function owners(): Map<string, Ownership> {
  const holder = globalThis as { [registrySymbol]?: Map<string, Ownership> };
  holder[registrySymbol] ??= new Map();
  return holder[registrySymbol];
}

/** A held share of this process's ownership of a file's advisory form; {@link AdvisoryOwnership.release} gives it back once. */
export interface AdvisoryOwnership {
  release(): void;
}

const noOwnershipNeeded: AdvisoryOwnership = Object.freeze({ release: () => undefined });

/**
 * Takes (or shares) this process's ownership of the advisory form on `db`'s file. A private
 * database (in memory, temporary) needs none: no other process can open it.
 *
 * @throws {UnsupportedFormError} another process owns the file's advisory form.
 */
export function ownAdvisoryForm(db: SqliteDatabase, table: TableDefinition): AdvisoryOwnership {
  if (db.memory || db.name === "" || db.name === ":memory:") return noOwnershipNeeded;
  const file = ownerFileOf(db.name);
  const registry = owners();
  let ownership = registry.get(file);
  if (ownership === undefined) {
    const lock = new Database(file, { timeout: 0 });
    try {
      lock.exec("BEGIN EXCLUSIVE");
    } catch (error) {
      lock.close();
      const busy = (error as { code?: unknown }).code;
      if (busy === "SQLITE_BUSY" || busy === "SQLITE_LOCKED") {
        throw new UnsupportedFormError(
          `Table "${table.name}" takes the advisory lock form, and another process already runs advisory lock subscriptions on the database file "${db.name}". SQLite keeps advisory keys in the process, so two processes on one file would run the same rows: one process at a time may use the form on a file (this one can take over when the other ends). To run several processes on one file, use the lease form (name a columns.lockedUntil column).`,
          { table: table.name, cause: error },
        );
      }
      throw error;
    }
    ownership = { lock, holders: 0 };
    registry.set(file, ownership);
  }
  const held = ownership;
  held.holders += 1;
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      held.holders -= 1;
      if (held.holders > 0) return;
      registry.delete(file);
      try {
        held.lock.exec("ROLLBACK");
      } finally {
        held.lock.close();
      }
    },
  };
}

/**
 * Whether another process owns `db`'s file's advisory form now (its advisory keys are then
 * invisible here): this process does not own it, and the companion file's exclusive lock is
 * taken. Asked without waiting, and without keeping the lock.
 */
export function advisoryOwnedElsewhere(db: SqliteDatabase): boolean {
  if (db.memory || db.name === "" || db.name === ":memory:") return false;
  const file = ownerFileOf(db.name);
  if (owners().has(file)) return false;
  const probe = new Database(file, { timeout: 0 });
  try {
    probe.exec("BEGIN EXCLUSIVE");
    probe.exec("ROLLBACK");
    return false;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") return true;
    throw error;
  } finally {
    probe.close();
  }
}
