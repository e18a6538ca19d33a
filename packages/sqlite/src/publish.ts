/**
 * Publishing on SQLite: one multi-row `INSERT … RETURNING id` per run of rows that fill the same
 * columns (a row without a priority leaves it to its default), chunked below SQLite's parameter
 * limit, all in one transaction.
 *
 * @module
 */
import { InvalidArgumentError, type RowId, type TableDefinition } from "@rowclaim/core";
import { type PublishRow, rowsPerStatement, StatementCache, statementChunks } from "@rowclaim/core/driver";
import type { SqliteDatabase, SqliteStatement } from "./database.js";
import { publishSql, type QuotedColumns, quoteColumns, quoteIdentifier } from "./sql.js";
import { inTransaction } from "./transaction.js";

/** SQLite's default limit on parameters in one statement (SQLITE_MAX_VARIABLE_NUMBER, 3.32+). */
const SQLITE_MAX_PARAMETERS = 32_766;

/** The most rows one insert statement carries, so that prepared inserts stay few and small. */
const MAX_ROWS_PER_INSERT = 500;

/** The most insert statements kept prepared per connection. */
const MAX_CACHED_INSERTS = 64;

interface Run {
  readonly columns: readonly string[];
  readonly rows: (readonly unknown[])[];
}

const publishers = new WeakMap<TableDefinition, TablePublisher>();

/** The publisher of `table`, made on first use and kept while the table definition lives. */
export function publisherOf(table: TableDefinition): TablePublisher {
  let publisher = publishers.get(table);
  if (publisher === undefined) {
    publisher = new TablePublisher(table);
    publishers.set(table, publisher);
  }
  return publisher;
}

/** Builds the inserts of one table; made once per table ({@link publisherOf}). */
export class TablePublisher {
  readonly #table: TableDefinition;
  readonly #columns: QuotedColumns;
  readonly #extra: ReadonlyMap<string, string>;

  constructor(table: TableDefinition) {
    this.#table = table;
    this.#columns = quoteColumns(table);
    this.#extra = new Map(table.extraColumns.map((column) => [column, quoteIdentifier(column)]));
  }

  /**
   * Inserts `rows` on `db` and returns their ids in order. Runs in one transaction of its own
   * unless `db` is already inside one (the caller's), where it joins it.
   */
  publish(db: SqliteDatabase, rows: readonly PublishRow[]): RowId[] {
    const runs = this.#runs(rows);
    const insert = (): RowId[] => runs.flatMap((run) => this.#insert(db, run));
    if (db.inTransaction || (runs.length === 1 && (runs[0]?.rows.length ?? 0) <= this.#chunkSize(runs[0])))
      return insert();
    return inTransaction(db, "immediate", insert);
  }

  #chunkSize(run: Run | undefined): number {
    return rowsPerStatement(run?.columns.length ?? 1, SQLITE_MAX_PARAMETERS, MAX_ROWS_PER_INSERT);
  }

  #insert(db: SqliteDatabase, run: Run): RowId[] {
    const ids: RowId[] = [];
    for (const chunk of statementChunks(run.rows, this.#chunkSize(run))) {
      const statement = prepareCached(db, publishSql(this.#columns, run.columns, chunk.length));
      let returned: Record<string, unknown>[];
      try {
        returned = statement.all(chunk.flat()) as Record<string, unknown>[];
      } catch (error) {
        if (error instanceof TypeError && /bind/i.test(error.message)) {
          throw new InvalidArgumentError(
            `publish(${this.#table.name}): a value cannot be stored in SQLite (${error.message}). Publish numbers, strings, bigints, booleans, Dates, Uint8Arrays or null in values.`,
            { table: this.#table.name, cause: error },
          );
        }
        throw error;
      }
      for (const row of returned) ids.push(row[this.#table.columns.id] as RowId);
    }
    return ids;
  }

  /**
   * The columns (quoted) `row` fills and their values: payload, group, runAt, priority (when
   * given), headers, the extra columns it names. `replacing`: only those a unique replacement
   * rewrites (not the group, nor the extra columns).
   */
  rowValues(row: PublishRow, replacing = false): { columns: string[]; values: unknown[] } {
    const c = this.#columns;
    const columns: string[] = [c.payload];
    const values: unknown[] = [row.payload];
    const add = (column: string | undefined, value: unknown): void => {
      if (column === undefined) return;
      columns.push(column);
      values.push(value);
    };
    add(replacing ? undefined : c.group, row.group);
    add(c.runAt, row.runAt === null ? null : row.runAt.getTime());
    add(row.priority === null ? undefined : c.priority, toSqliteValue(row.priority));
    add(c.headers, row.headers);
    if (replacing) return { columns, values };
    for (const [name, quoted] of this.#extra) {
      if (Object.hasOwn(row.values, name)) add(quoted, toSqliteValue(row.values[name]));
    }
    return { columns, values };
  }

  /** Splits rows into runs of consecutive rows that fill the same columns. */
  #runs(rows: readonly PublishRow[]): Run[] {
    const runs: Run[] = [];
    let shape = "";
    for (const row of rows) {
      const { columns, values } = this.rowValues(row);
      const rowShape = columns.join("\u0000");
      const last = runs[runs.length - 1];
      if (last !== undefined && rowShape === shape) last.rows.push(values);
      else runs.push({ columns, rows: [values] });
      shape = rowShape;
    }
    return runs;
  }
}

/**
 * Converts a value for an extra column: whole numbers to bigints (better-sqlite3 binds every
 * JavaScript number as REAL, which an untyped column would keep, so that `7` would render as
 * `7.0` in an advisory key), Dates to epoch milliseconds, booleans to 1/0, undefined to NULL.
 */
function toSqliteValue(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  if (value instanceof Date) return BigInt(value.getTime());
  if (typeof value === "boolean") return value ? 1n : 0n;
  return value;
}

const inserts = new WeakMap<SqliteDatabase, StatementCache<SqliteStatement>>();

function prepareCached(db: SqliteDatabase, sql: string): SqliteStatement {
  let cache = inserts.get(db);
  if (cache === undefined) {
    cache = new StatementCache(MAX_CACHED_INSERTS);
    inserts.set(db, cache);
  }
  return cache.get(sql, () => db.prepare(sql));
}
