/**
 * Advisory keys on SQLite, kept in the process: SQLite has no advisory locks, so the driver
 * keeps the set of keys in work per database file, in a registry shared by every copy of this
 * package loaded in the process. The registry is keyed by the database file's real path; a
 * private database (`:memory:` or a temporary one) by its connection object.
 *
 * Two processes on one database file do not see each other's keys: rows whose keys match may
 * then run at the same time, and a row may be delivered twice.
 *
 * @module
 */
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { AdvisoryToken } from "@rowclaim/core";
import type { SqliteDatabase } from "./database.js";

interface KeyRegistry {
  readonly byFile: Map<string, Set<string>>;
  readonly byDatabase: WeakMap<object, Set<string>>;
}

const registrySymbol = Symbol.for("rowclaim.sqlite.advisoryKeys");

function registry(): KeyRegistry {
  const holder = globalThis as { [registrySymbol]?: KeyRegistry };
  holder[registrySymbol] ??= { byFile: new Map(), byDatabase: new WeakMap() };
  return holder[registrySymbol];
}

/** Whether `db` is private to its connection (in memory, or a temporary file). */
function isPrivate(db: SqliteDatabase): boolean {
  return db.memory || db.name === "" || db.name === ":memory:";
}

/** The registry key of a database file: its real path (its resolved path when it cannot be resolved). */
export function databaseFileKey(filename: string): string {
  const absolute = resolve(filename);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/** The keys in work on `db`'s database file, in this process. */
export function heldKeys(db: SqliteDatabase): Set<string> {
  const { byFile, byDatabase } = registry();
  if (isPrivate(db)) {
    let keys = byDatabase.get(db);
    if (keys === undefined) {
      keys = new Set();
      byDatabase.set(db, keys);
    }
    return keys;
  }
  const file = databaseFileKey(db.name);
  let keys = byFile.get(file);
  if (keys === undefined) {
    keys = new Set();
    byFile.set(file, keys);
  }
  return keys;
}

/** An advisory key held by one delivery: its token. Dropping it twice drops it once. */
export class HeldKey implements AdvisoryToken {
  readonly form = "advisory";
  readonly key: string;
  readonly #keys: Set<string>;
  #held = true;

  /** Holds `key` in `keys`; the caller checked that no one holds it. */
  constructor(keys: Set<string>, key: string) {
    this.#keys = keys;
    this.key = key;
    keys.add(key);
  }

  /** Whether the key is still held by this token. */
  get held(): boolean {
    return this.#held;
  }

  /** Drops the key (once). */
  drop(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#keys.delete(this.key);
  }
}
