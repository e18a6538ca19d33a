/**
 * Advisory keys on SQLite, kept in the process: SQLite has no advisory locks, so the driver
 * keeps the set of keys in work per database file, in a registry shared by every copy of this
 * package loaded in the process. The registry is keyed by the database file's real path; a
 * private database (`:memory:` or a temporary one) by its connection object. Each connection
 * remembers its file's set, so the path is resolved once per connection.
 *
 * Two processes on one database file do not see each other's keys: rows whose keys match may
 * then run at the same time, and a row may be delivered twice.
 *
 * @module
 */
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { AdvisoryToken } from "@rowclaim/core/driver";
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

/**
 * The keys in work on `db`'s database file, in this process. The file's real path is resolved
 * once per connection (a file system call per claim cost about 14 µs a job), and the connection
 * keeps its file's set from then on: a connection stays on the file it opened.
 */
export function heldKeys(db: SqliteDatabase): Set<string> {
  const { byFile, byDatabase } = registry();
  let keys = byDatabase.get(db);
  if (keys !== undefined) return keys;
  if (isPrivate(db)) keys = new Set();
  else {
    const file = databaseFileKey(db.name);
    keys = byFile.get(file);
    if (keys === undefined) {
      keys = new Set();
      byFile.set(file, keys);
    }
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
