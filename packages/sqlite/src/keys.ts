/**
 * Advisory keys on SQLite, kept in the process: SQLite has no advisory locks, so the driver
 * keeps the set of keys in work per database file, in a registry on `globalThis` shared by every
 * copy of this package loaded in the process, keyed by the file's real path (a private database
 * by its connection). Two processes on one file do not see each other's keys (`advisory-owner.ts`
 * refuses the second).
 *
 * @module
 */
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { AdvisoryToken } from "@rowclaim/core/driver";
import type { SqliteDatabase } from "./database.js";

/** The process-wide registry named `rowclaim.sqlite.<name>`, made by `make` on first use. */
export function processRegistry<T>(name: string, make: () => T): T {
  const holder = globalThis as { [key: symbol]: T | undefined };
  const symbol = Symbol.for(`rowclaim.sqlite.${name}`);
  const registry = holder[symbol] ?? make();
  holder[symbol] = registry;
  return registry;
}

/** Whether `db` is private to its connection (in memory, or a temporary file). */
export function isPrivate(db: SqliteDatabase): boolean {
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

/**
 * The keys in work on `db`'s database file, in this process. The file's real path is resolved
 * once per connection (a file system call per claim cost about 14 µs a job).
 */
export function heldKeys(db: SqliteDatabase): Set<string> {
  const { byFile, byDatabase } = processRegistry("advisoryKeys", () => ({
    byFile: new Map<string, Set<string>>(),
    byDatabase: new WeakMap<object, Set<string>>(),
  }));
  let keys = byDatabase.get(db);
  if (keys !== undefined) return keys;
  if (isPrivate(db)) keys = new Set();
  else {
    const file = databaseFileKey(db.name);
    keys = byFile.get(file) ?? new Set();
    byFile.set(file, keys);
  }
  byDatabase.set(db, keys);
  return keys;
}

/**
 * An advisory key held by one delivery: its token. Dropping it twice drops it once. With a
 * per-key limit above 1, `key` is the slot's key and `rowKey` the row's own key, held beside it.
 */
export class HeldKey implements AdvisoryToken {
  readonly form = "advisory";
  readonly key: string;
  readonly rowKey: string | undefined;
  readonly #keys: Set<string>;
  #held = true;

  /** Holds `key` (and `rowKey`, if given) in `keys`; the caller checked that no one holds them. */
  constructor(keys: Set<string>, key: string, rowKey?: string) {
    this.#keys = keys;
    this.key = key;
    this.rowKey = rowKey;
    keys.add(key);
    if (rowKey !== undefined) keys.add(rowKey);
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
    if (this.rowKey !== undefined) this.#keys.delete(this.rowKey);
  }
}
