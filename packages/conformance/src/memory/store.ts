/**
 * The memory database: tables of rows kept in the process, the row locks and advisory keys
 * sessions hold on them, and the constraints a test puts on them. Every driver made on one
 * {@link MemoryDatabase} sees the same tables, as drivers on one server do. Single-threaded: each
 * operation runs to its end before another starts, so every transaction is serializable.
 *
 * @module
 */
import { ConstraintError, type RowId, SchemaError, type TableDefinition } from "@rowclaim/core";

/** A row as the store keeps it: every column's value, by column name. */
export type MemoryRow = Readonly<Record<string, unknown>>;

/** One column of a memory table. */
export interface MemoryColumn {
  /** The column's name. */
  readonly name: string;
  /** The value an insert that names no value for the column writes (`null` unless given). */
  readonly default?: unknown;
  /** Numbered by the table on insert (the primary key): 1, 2, 3 … */
  readonly serial?: boolean;
}

/** A check a table's rows must pass: a stand-in for a `CHECK` or `UNIQUE` constraint. */
interface Check {
  readonly name: string;
  /** Why `row` breaks the constraint (with `others`: rows also in the table), or `undefined`. */
  violation(row: MemoryRow, others: Iterable<MemoryRow>): string | undefined;
}

/** Who holds a lock: a transaction or a session (any object, compared by identity). */
export type LockOwner = object;

/** One table of the memory database. */
export class MemoryTable {
  /** The table's name. */
  readonly name: string;
  /** The schema it lives in, if named. */
  readonly schema: string | undefined;
  /** Its columns, by name. */
  readonly columns: ReadonlyMap<string, MemoryColumn>;
  /** Its rows, by the id's string form, in insertion (id) order. */
  readonly rows = new Map<string, MemoryRow>();
  /** Row locks, by the id's string form. */
  readonly locks = new Map<string, LockOwner>();
  readonly #checks: Check[] = [];
  #nextId = 1;

  constructor(name: string, schema: string | undefined, columns: readonly MemoryColumn[]) {
    this.name = name;
    this.schema = schema;
    this.columns = new Map(columns.map((column) => [column.name, column]));
  }

  /** A full row from `values`: every other column at its default, the serial column numbered. */
  newRow(values: Readonly<Record<string, unknown>>): Record<string, unknown> {
    const row: Record<string, unknown> = {};
    for (const column of this.columns.values()) {
      if (column.serial === true && values[column.name] === undefined) row[column.name] = this.#nextId++;
      else
        row[column.name] = values[column.name] === undefined ? (column.default ?? null) : values[column.name];
    }
    return row;
  }

  /** Adds a constraint; rows already in the table are not checked. */
  addCheck(name: string, violation: Check["violation"]): void {
    this.#checks.push({ name, violation });
  }

  /** Removes the constraint named `name`. */
  dropCheck(name: string): void {
    const index = this.#checks.findIndex((check) => check.name === name);
    if (index !== -1) this.#checks.splice(index, 1);
  }

  /**
   * Throws `ConstraintError` when `row` (replacing the row of key `replacing`, if any) breaks a
   * constraint of the table, `pending` being rows about to be inserted with it.
   */
  check(row: MemoryRow, replacing?: string, pending: readonly MemoryRow[] = []): void {
    for (const check of this.#checks) {
      const others = [...this.rows].filter(([key]) => key !== replacing).map(([, other]) => other);
      const problem = check.violation(row, [...others, ...pending]);
      if (problem !== undefined) {
        throw new ConstraintError(`Table "${this.name}": ${problem} (constraint "${check.name}").`, {
          table: this.name,
        });
      }
    }
  }

  /** Rows in id order (copies). */
  snapshot(): Record<string, unknown>[] {
    return [...this.rows.values()].map(copyRow);
  }
}

/** A copy of a row, with byte values copied too. */
export function copyRow(row: MemoryRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    out[name] =
      value instanceof Uint8Array ? new Uint8Array(value) : value instanceof Date ? new Date(value) : value;
  }
  return out;
}

/** The string form of an id: the key of the store's maps. */
export function rowKey(id: RowId | unknown): string {
  return String(id);
}

function tableKey(schema: string | undefined, name: string): string {
  return schema === undefined ? JSON.stringify([name]) : JSON.stringify([schema, name]);
}

/** A row lock a test holds, from {@link MemoryDatabase.holdRowLock}. */
export interface HeldMemoryLock {
  /** Lets the row go. */
  release(): void;
}

/**
 * The memory database. Make one per test file (or per test), make drivers on it with
 * `createMemoryDriver({ database })`, and read or change it behind the drivers' backs with its
 * administration methods, as a test does with a second connection to a real server.
 */
export class MemoryDatabase {
  readonly #tables = new Map<string, MemoryTable>();
  /** Advisory keys, by key: the session that holds each (database-wide, as on a server). */
  readonly #keys = new Map<string, LockOwner>();
  readonly #unlockWaiters = new Set<() => void>();

  /** The table `schema.name`, or `undefined` when there is none. */
  table(name: string, schema?: string): MemoryTable | undefined {
    return this.#tables.get(tableKey(schema, name));
  }

  /** The table a definition names, or `undefined`. */
  tableOf(table: TableDefinition, name: string = table.name): MemoryTable | undefined {
    return this.table(name, table.schema);
  }

  /**
   * The table a definition names, or `SchemaError` naming `doing` (what the driver was doing)
   * when there is none.
   */
  requireTable(table: TableDefinition, doing: string, name: string = table.name): MemoryTable {
    const found = this.tableOf(table, name);
    if (found === undefined) {
      throw new SchemaError(`Table "${name}" does not exist in the memory database (${doing}).`, {
        table: name,
        statement: doing,
      });
    }
    return found;
  }

  /**
   * Creates a table.
   *
   * @throws {Error} when one of that name exists and `ifNotExists` is not set.
   */
  createTable(
    name: string,
    columns: readonly MemoryColumn[],
    options: { readonly schema?: string; readonly ifNotExists?: boolean } = {},
  ): void {
    const key = tableKey(options.schema, name);
    if (this.#tables.has(key)) {
      if (options.ifNotExists === true) return;
      throw new Error(`memory database: table "${name}" already exists.`);
    }
    this.#tables.set(key, new MemoryTable(name, options.schema, columns));
  }

  /** Drops a table (nothing when there is none). Locks on its rows go with it. */
  dropTable(name: string, schema?: string): void {
    const table = this.table(name, schema);
    if (table === undefined) return;
    this.#tables.delete(tableKey(schema, name));
    table.locks.clear();
    this.#notifyUnlock();
  }

  /** Every row of `table` (copies, every column), in id order: what a second connection reads. */
  rows(table: TableDefinition): Record<string, unknown>[] {
    return this.requireTable(table, "reading its rows").snapshot();
  }

  /**
   * Holds row `id` of `table` locked, as another transaction's `SELECT … FOR UPDATE` does, until
   * the returned lock is released: claims pass over it.
   */
  holdRowLock(table: TableDefinition, id: RowId): HeldMemoryLock {
    const data = this.requireTable(table, "locking a row");
    const owner = {};
    if (!this.lockRow(data, rowKey(id), owner)) {
      throw new Error(`memory database: row ${String(id)} of "${table.name}" is locked already.`);
    }
    return { release: () => this.unlockRow(data, rowKey(id), owner) };
  }

  /** Locks a row for `owner`; `false` when another owner holds it. */
  lockRow(data: MemoryTable, key: string, owner: LockOwner): boolean {
    const holder = data.locks.get(key);
    if (holder !== undefined && holder !== owner) return false;
    data.locks.set(key, owner);
    return true;
  }

  /** Unlocks a row `owner` holds. */
  unlockRow(data: MemoryTable, key: string, owner: LockOwner): void {
    if (data.locks.get(key) !== owner) return;
    data.locks.delete(key);
    this.#notifyUnlock();
  }

  /** Who holds row `id` of `table` locked, if anyone. */
  rowLockHolder(table: TableDefinition, id: RowId): LockOwner | undefined {
    return this.tableOf(table)?.locks.get(rowKey(id));
  }

  /** Resolves at the next row unlock (or table drop): for a claim that waits behind locks. */
  nextUnlock(): Promise<void> {
    return new Promise((resolve) => {
      this.#unlockWaiters.add(resolve);
    });
  }

  #notifyUnlock(): void {
    const waiters = [...this.#unlockWaiters];
    this.#unlockWaiters.clear();
    for (const wake of waiters) wake();
  }

  /** Tries the advisory lock of `key` for `owner`, never waiting; `false` when another owner holds it. */
  tryKey(key: string, owner: LockOwner): boolean {
    const holder = this.#keys.get(key);
    if (holder !== undefined && holder !== owner) return false;
    this.#keys.set(key, owner);
    return true;
  }

  /** Unlocks `key` if `owner` holds it; whether it did. */
  unlockKey(key: string, owner: LockOwner): boolean {
    if (this.#keys.get(key) !== owner) return false;
    this.#keys.delete(key);
    return true;
  }

  /** Whether any session holds the advisory lock of `key`. */
  keyHeld(key: string): boolean {
    return this.#keys.has(key);
  }

  /**
   * Adds a unique constraint on `columns` of `table` (rows whose values in those columns are all
   * non-null and equal break it), as `CREATE UNIQUE INDEX` does.
   */
  addUnique(table: MemoryTable, name: string, columns: readonly string[]): void {
    for (const column of columns) requireColumn(table, column);
    table.addCheck(name, (row, others) => {
      const values = columns.map((column) => row[column]);
      if (values.some((value) => value === null || value === undefined)) return undefined;
      for (const other of others) {
        if (columns.every((column, index) => sameValue(other[column], values[index]))) {
          return `a row with (${columns.join(", ")}) = (${values.map(String).join(", ")}) exists`;
        }
      }
      return undefined;
    });
  }

  /**
   * Refuses, until the returned function is called, every write that leaves `column` of a row of
   * `table` (only the row whose id is `only`, when given) non-null: a stand-in for `CHECK (column IS NULL)`.
   */
  refuseNonNull(table: TableDefinition, column: string, only?: RowId): () => void {
    const data = this.requireTable(table, "adding a constraint");
    requireColumn(data, column);
    const name = `${table.name}_${column}_is_null${only === undefined ? "" : `_${String(only)}`}`;
    const id = table.columns.id;
    data.addCheck(name, (row) =>
      row[column] === null || row[column] === undefined || (only !== undefined && !sameValue(row[id], only))
        ? undefined
        : `${column} must be NULL`,
    );
    return () => data.dropCheck(name);
  }
}

function requireColumn(table: MemoryTable, column: string): void {
  if (!table.columns.has(column))
    throw new Error(`memory database: table "${table.name}" has no column "${column}".`);
}

/** Whether two stored values are equal (dates by time, bytes by content, numbers and their text alike). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date) return timeOf(a) === timeOf(b) && timeOf(a) !== null;
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((byte, index) => byte === b[index]);
  }
  if (a === null || a === undefined || b === null || b === undefined) return false;
  return a === b || String(a) === String(b);
}

/** A stored time value in milliseconds, or `null` for NULL. */
export function timeOf(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.getTime();
  if (typeof value === "number") return value;
  const parsed = new Date(String(value)).getTime();
  return Number.isNaN(parsed) ? null : parsed;
}
