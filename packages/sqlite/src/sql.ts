/**
 * Every SQL statement the SQLite driver runs, built from a table description. Identifiers go
 * through {@link quoteIdentifier}; values always travel as parameters (`@…`, or `?` in the
 * publish insert). Times are INTEGER milliseconds since the Unix epoch.
 *
 * Published as `@rowclaim/sqlite/sql`, for tools and for drivers on another SQLite binding
 * (`node:sqlite`, …); it does not load `better-sqlite3`. Its exports follow the driver's version,
 * but are not yet a stable contract: pin the version you build on.
 *
 * @module
 */
import { DeclarationError, type TableDefinition } from "@rowclaim/core";

/**
 * Quotes an SQLite identifier: wraps it in double quotes and doubles every embedded double quote.
 *
 * @throws {DeclarationError} when the name holds a NUL character, which SQLite cannot quote.
 */
export function quoteIdentifier(name: string): string {
  if (name.includes("\u0000")) {
    throw new DeclarationError(
      `The SQLite identifier ${JSON.stringify(name)} holds a NUL character, which SQLite cannot quote. Rename it.`,
    );
  }
  return `"${name.replaceAll('"', '""')}"`;
}

/** The quoted, schema-qualified name of a table (`"main"."jobs"` style, or just `"jobs"`). */
export function qualifiedTable(name: string, schema: string | undefined): string {
  return schema === undefined ? quoteIdentifier(name) : `${quoteIdentifier(schema)}.${quoteIdentifier(name)}`;
}

/** The quoted column names of a table's roles, present only where the table names the role. */
export interface QuotedColumns {
  readonly table: string;
  readonly id: string;
  readonly payload: string;
  readonly attempt: string | undefined;
  readonly runAt: string | undefined;
  readonly priority: string | undefined;
  readonly group: string | undefined;
  readonly processedAt: string | undefined;
  readonly lockedUntil: string | undefined;
  readonly headers: string | undefined;
  /** The unique key column (unique jobs), written NULL by every claim. */
  readonly key: string | undefined;
  /** Every described column, quoted, in the table's column order. */
  readonly all: readonly string[];
}

/** Quotes a table's name and every column it describes. */
export function quoteColumns(table: TableDefinition): QuotedColumns {
  const q = (name: string | undefined): string | undefined =>
    name === undefined ? undefined : quoteIdentifier(name);
  const { columns } = table;
  return {
    table: qualifiedTable(table.name, table.schema),
    id: quoteIdentifier(columns.id),
    payload: quoteIdentifier(columns.payload),
    attempt: q(columns.attempt),
    runAt: q(columns.runAt),
    priority: q(columns.priority),
    group: q(columns.group),
    processedAt: q(columns.processedAt),
    lockedUntil: q(columns.lockedUntil),
    headers: q(columns.headers),
    key: q(columns.key),
    all: table.allColumns.map((column) => quoteIdentifier(column)),
  };
}

/** The claim order: priority, then runAt (NULLs first, SQLite's ascending order), then id. */
export function claimOrder(c: QuotedColumns): string {
  return [c.priority, c.runAt, c.id].filter((column) => column !== undefined).join(", ");
}

/** The condition a claimable row meets: not processed, in the group (`@group`, NULL matching NULL), due and not leased (`@now`). */
export function claimableCondition(c: QuotedColumns): string {
  const parts: string[] = [];
  if (c.processedAt !== undefined) parts.push(`${c.processedAt} IS NULL`);
  if (c.group !== undefined) parts.push(`${c.group} IS @group`);
  if (c.runAt !== undefined) parts.push(`(${c.runAt} IS NULL OR ${c.runAt} <= @now)`);
  if (c.lockedUntil !== undefined) parts.push(`(${c.lockedUntil} IS NULL OR ${c.lockedUntil} <= @now)`);
  return parts.length === 0 ? "1" : parts.join(" AND ");
}

function returning(c: QuotedColumns): string {
  return `RETURNING ${c.all.join(", ")}`;
}

/** What every take writes besides the lease: the attempt counted, the unique key (unique jobs) NULL. */
function takeSets(c: QuotedColumns): string[] {
  const sets: string[] = [];
  if (c.attempt !== undefined) sets.push(`${c.attempt} = ${c.attempt} + 1`);
  if (c.key !== undefined) sets.push(`${c.key} = NULL`);
  return sets;
}

function leaseSet(c: QuotedColumns & { lockedUntil: string }): string {
  return [`${c.lockedUntil} = @expiry`, ...takeSets(c)].join(", ");
}

/**
 * The lease claim: one `UPDATE … RETURNING` that writes `@expiry` and counts the attempt on up to
 * `limit` claimable rows in claim order (`@limit` when not given), returned in no order. The limit
 * is written into the text, a count the runtime computes: with a bound `LIMIT` SQLite planned the
 * claim-order scan worse (the claim took twice as long).
 */
export function leaseClaimSql(c: QuotedColumns & { lockedUntil: string }, limit?: number): string {
  const limitSql = limit === undefined ? "@limit" : String(wholeLimit(limit));
  return `UPDATE ${c.table} SET ${leaseSet(c)} WHERE ${c.id} IN (SELECT ${c.id} FROM ${c.table} WHERE ${claimableCondition(c)} ORDER BY ${claimOrder(c)} LIMIT ${limitSql}) ${returning(c)}`;
}

/** A claim's row count as SQL text: a whole number, at least 1. */
function wholeLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new RangeError(`A claim limit must be a whole number ≥ 1, not ${limit}.`);
  return limit;
}

/** The FIFO lease claim: the head of the group (its first unfinished row in claim order), when due and no row of the group is in work. */
export function fifoLeaseClaimSql(c: QuotedColumns & { lockedUntil: string; group: string }): string {
  const unfinished = c.processedAt === undefined ? "" : ` AND ${c.processedAt} IS NULL`;
  const due = c.runAt === undefined ? "" : ` AND (${c.runAt} IS NULL OR ${c.runAt} <= @now)`;
  return (
    `UPDATE ${c.table} SET ${leaseSet(c)} WHERE ${c.id} = (SELECT ${c.id} FROM ${c.table} WHERE ${c.group} IS @group${unfinished} ORDER BY ${claimOrder(c)} LIMIT 1)` +
    `${due} AND (${c.lockedUntil} IS NULL OR ${c.lockedUntil} <= @now)` +
    ` AND NOT EXISTS (SELECT 1 FROM ${c.table} WHERE ${c.group} IS @group${unfinished} AND ${c.lockedUntil} > @now) ${returning(c)}`
  );
}

/** Moves one lease from `@token` to `@expiry`, only while the row still holds `@token`. */
export function leaseExtendSql(c: QuotedColumns & { lockedUntil: string }): string {
  return `UPDATE ${c.table} SET ${c.lockedUntil} = @expiry WHERE ${c.id} = @id AND ${c.lockedUntil} = @token`;
}

/** The advisory key rendered in SQL: literal parts as parameters `@k0`, `@k1`…, columns cast to text, NULL as the empty string. */
export function advisoryKeySql(table: TableDefinition): {
  readonly sql: string;
  readonly literals: Readonly<Record<string, string>>;
} {
  const parts = table.advisoryKey?.parts ?? [];
  const literals: Record<string, string> = {};
  const sql = parts.map((part, index) => {
    if ("literal" in part) {
      literals[`k${index}`] = part.literal;
      return `@k${index}`;
    }
    return `COALESCE(CAST(${quoteIdentifier(part.column)} AS TEXT), '')`;
  });
  return { sql: sql.length === 0 ? "''" : sql.join(" || "), literals };
}

/**
 * The advisory candidates: the first `window` (or `@window`) claimable rows in claim order whose
 * rendered key is not in `@held` (a JSON array of the keys this process holds), as `rid`/`rkey`.
 * The window is written into the text, as the lease claim's limit (7 µs against 20 µs for four
 * rows); the claim picks each key's first rows in JS (a window function cost ten times as much).
 */
export function advisoryCandidatesSql(c: QuotedColumns, keySql: string, window?: number): string {
  const windowSql = window === undefined ? "@window" : String(wholeLimit(window));
  return (
    `SELECT ${c.id} AS rid, ${keySql} AS rkey FROM ${c.table} WHERE ${claimableCondition(c)}` +
    ` AND ${keySql} NOT IN (SELECT value FROM json_each(@held)) ORDER BY ${claimOrder(c)} LIMIT ${windowSql}`
  );
}

/** The advisory take: counts the attempt on row `@id` while it is still claimable, NULLs its unique key, and returns it. */
export function advisoryTakeSql(c: QuotedColumns): string {
  const sets = takeSets(c);
  if (sets.length === 0) {
    return `SELECT ${c.all.join(", ")} FROM ${c.table} WHERE ${c.id} = @id AND ${claimableCondition(c)}`;
  }
  return `UPDATE ${c.table} SET ${sets.join(", ")} WHERE ${c.id} = @id AND ${claimableCondition(c)} ${returning(c)}`;
}

/** The SQL of every settlement but `moveToTable`, for rows matched by `where`. `null` where the settlement changes nothing. */
export interface SettlementSql {
  readonly delete: string;
  readonly markProcessed: string | null;
  readonly release: string | null;
  readonly moveToGroup: string | null;
}

/** Which row a settlement applies to: by id, holding the lease token (lease form) or still unfinished (advisory). */
function settlementWhere(c: QuotedColumns, tokenGuard: boolean): string {
  if (tokenGuard && c.lockedUntil !== undefined) return `${c.id} = @id AND ${c.lockedUntil} = @token`;
  if (c.processedAt !== undefined) return `${c.id} = @id AND ${c.processedAt} IS NULL`;
  return `${c.id} = @id`;
}

/** Builds the settlements; `tokenGuard` (lease form) adds `AND lockedUntil = @token`. Those that keep the row clear `lockedUntil`. */
export function settlementSql(c: QuotedColumns, tokenGuard: boolean): SettlementSql {
  const where = settlementWhere(c, tokenGuard);
  const unlock = c.lockedUntil === undefined ? [] : [`${c.lockedUntil} = NULL`];
  const update = (sets: readonly string[]): string | null =>
    sets.length === 0 ? null : `UPDATE ${c.table} SET ${sets.join(", ")} WHERE ${where}`;
  return {
    delete: `DELETE FROM ${c.table} WHERE ${where}`,
    markProcessed: c.processedAt === undefined ? null : update([`${c.processedAt} = @at`, ...unlock]),
    release: update([
      ...(c.runAt === undefined ? [] : [`${c.runAt} = COALESCE(@runAt, ${c.runAt})`]),
      ...unlock,
    ]),
    moveToGroup: c.group === undefined ? null : update([`${c.group} = @group`, ...unlock]),
  };
}

/** The copy half of `moveToTable`: the row's described columns but the id, `lockedUntil` NULL, into `target`. */
export function moveCopySql(
  table: TableDefinition,
  c: QuotedColumns,
  target: string,
  tokenGuard: boolean,
): string {
  const columns = table.allColumns.filter((column) => column !== table.columns.id);
  const into = columns.map((column) => quoteIdentifier(column));
  const values = columns.map((column) =>
    column === table.columns.lockedUntil ? "NULL" : quoteIdentifier(column),
  );
  const where = settlementWhere(c, tokenGuard);
  return `INSERT INTO ${qualifiedTable(target, table.schema)} (${into.join(", ")}) SELECT ${values.join(", ")} FROM ${c.table} WHERE ${where}`;
}

/** The multi-row publish insert: `rows` rows of `columns` (quoted), returning the ids. */
export function publishSql(c: QuotedColumns, columns: readonly string[], rows: number): string {
  const tuple = `(${columns.map(() => "?").join(", ")})`;
  return `INSERT INTO ${c.table} (${columns.join(", ")}) VALUES ${Array.from({ length: rows }, () => tuple).join(", ")} RETURNING ${c.id}`;
}

/** Puts a database file the driver opens in WAL mode (readers never wait for the writer). */
export const walJournalPragma = "journal_mode = WAL";

/** The `synchronous` level a driver sets on a file it opens (`SqliteFileOptions.synchronous`), by name. */
export const synchronousPragma: Readonly<Record<"full" | "normal", string>> = Object.freeze({
  full: "synchronous = FULL",
  normal: "synchronous = NORMAL",
});

/** Reads a table's column names: `pragma_table_info` with the table and schema as parameters. */
export const tableColumnsSql = "SELECT name FROM pragma_table_info(@table, @schema)";

/** Reads the SQLite library's version. */
export const versionSql = "SELECT sqlite_version() AS version";
