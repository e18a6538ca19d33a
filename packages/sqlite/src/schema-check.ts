/**
 * The recommended schema of a queue table on SQLite (times as INTEGER milliseconds since the Unix
 * epoch), and the checks `open()` makes: the library's version and every described column.
 *
 * @module
 */
import { SchemaError, ServerTooOldError, type TableDefinition } from "@rowclaim/core";
import type { SqliteDatabase } from "./database.js";
import { qualifiedTable, quoteIdentifier, tableColumnsSql, versionSql } from "./sql.js";
import { checkUniqueIndex } from "./unique-publish.js";
import { uniqueIndexSql } from "./unique-sql.js";

/** The oldest SQLite library the driver runs on: 3.35.0 brought `UPDATE … RETURNING`. */
export const SQLITE_VERSION_FLOOR = "3.35.0";

/**
 * The recommended `CREATE TABLE` for `table` and its claim-order index (group, priority, runAt,
 * id: the columns the table has), as SQL text for `db.exec`.
 *
 * @example
 * db.exec(driver.schemaSql(jobs));
 */
export function schemaSql(table: TableDefinition): string {
  const { columns } = table;
  const definitions: string[] = [];
  const add = (column: string | undefined, type: string): void => {
    if (column !== undefined) definitions.push(`  ${quoteIdentifier(column)} ${type}`);
  };
  add(columns.id, "INTEGER PRIMARY KEY AUTOINCREMENT");
  add(columns.payload, table.payloadType === "bytes" ? "BLOB NOT NULL" : "TEXT NOT NULL");
  add(columns.attempt, "INTEGER NOT NULL DEFAULT 1");
  add(columns.runAt, "INTEGER");
  add(columns.priority, "INTEGER NOT NULL DEFAULT 0");
  add(columns.group, "TEXT");
  add(columns.processedAt, "INTEGER");
  add(columns.lockedUntil, "INTEGER");
  add(columns.headers, "TEXT");
  add(columns.key, "TEXT");
  for (const column of table.extraColumns) definitions.push(`  ${quoteIdentifier(column)}`);
  const statements = [
    "-- rowclaim queue table. Times (runAt, processedAt, lockedUntil) are INTEGER milliseconds since the Unix epoch (UTC).",
    `CREATE TABLE IF NOT EXISTS ${qualifiedTable(table.name, table.schema)} (\n${definitions.join(",\n")}\n);`,
  ];
  const indexed = [columns.group, columns.priority, columns.runAt].filter(
    (column): column is string => column !== undefined,
  );
  if (indexed.length > 0) {
    const index = qualifiedTable(`${table.name}_claim_order`, table.schema);
    const on = [...indexed, columns.id].map((column) => quoteIdentifier(column)).join(", ");
    statements.push(`CREATE INDEX IF NOT EXISTS ${index} ON ${quoteIdentifier(table.name)} (${on});`);
  }
  if (columns.key !== undefined) statements.push(uniqueIndexSql(table));
  return `${statements.join("\n")}\n`;
}

/** A statement the claimer will run, by a name people read, for the errors of {@link checkSchema}. */
export interface NamedStatement {
  readonly name: string;
  readonly sql: string;
}

/**
 * Checks that the SQLite library is new enough and that `target` has every column in `columnNames`.
 *
 * @throws {ServerTooOldError} the library is older than {@link SQLITE_VERSION_FLOOR}.
 * @throws {SchemaError} the table or a column is missing; names the table, the column and the
 * first statement that needs it.
 */
export function checkSchema(
  db: SqliteDatabase,
  table: TableDefinition,
  target: { readonly name: string; readonly role: string },
  columnNames: readonly string[],
  statements: readonly NamedStatement[],
): void {
  checkVersion(db, table);
  let present: Set<string>;
  try {
    const rows = db.prepare(tableColumnsSql).all({ table: target.name, schema: table.schema ?? null }) as {
      name: string;
    }[];
    present = new Set(rows.map((row) => row.name));
  } catch (cause) {
    throw new SchemaError(
      `Table "${table.name}" (SQLite, ${table.form} form): the ${target.role} "${target.name}" cannot be read in schema "${table.schema ?? "main"}". Attach the database or fix the schema name.`,
      { table: table.name, cause },
    );
  }
  const first = statements[0];
  if (present.size === 0) {
    throw new SchemaError(
      `Table "${table.name}" (SQLite, ${table.form} form): the ${target.role} "${target.name}" does not exist, and ${first === undefined ? "every statement" : first.name} needs it. Create it (driver.schemaSql(table) gives the recommended CREATE TABLE).`,
      { table: table.name, statement: first?.sql },
    );
  }
  for (const column of columnNames) {
    if (present.has(column)) continue;
    const quoted = quoteIdentifier(column);
    const statement = statements.find((candidate) => candidate.sql.includes(quoted)) ?? first;
    throw new SchemaError(
      `Table "${table.name}" (SQLite, ${table.form} form): the ${target.role} "${target.name}" has no column "${column}", which ${statement === undefined ? "the driver" : statement.name} needs. Add the column or fix the table description.`,
      { table: table.name, column, statement: statement?.sql },
    );
  }
  if (target.role === "table") checkUniqueIndex(db, table);
}

/** Refuses an SQLite library older than {@link SQLITE_VERSION_FLOOR} (`ServerTooOldError`). */
function checkVersion(db: SqliteDatabase, table: TableDefinition): void {
  const row = db.prepare(versionSql).get() as { version: string };
  if (compareVersions(row.version, SQLITE_VERSION_FLOOR) < 0) {
    throw new ServerTooOldError(
      `Table "${table.name}" (SQLite, ${table.form} form): SQLite ${row.version} has no UPDATE … RETURNING; the driver needs ${SQLITE_VERSION_FLOOR} or later. Upgrade better-sqlite3.`,
      { table: table.name, serverVersion: row.version, floor: SQLITE_VERSION_FLOOR },
    );
  }
}

/** Compares dotted version strings numerically. */
export function compareVersions(a: string, b: string): number {
  const x = a.split(".").map((part) => Number.parseInt(part, 10) || 0);
  const y = b.split(".").map((part) => Number.parseInt(part, 10) || 0);
  for (let i = 0; i < Math.max(x.length, y.length); i += 1) {
    const difference = (x[i] ?? 0) - (y[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}
