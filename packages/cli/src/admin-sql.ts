/**
 * Every SQL statement the command line runs itself (outside the drivers), for each dialect:
 * identifier quoting, dropping a table, listing a table's columns and indexes, and the fixes
 * `check` prints. (`status` reads through core's `readQueueStatus` and the drivers.)
 * Identifiers are always quoted; values always travel as parameters.
 *
 * @module
 */
import type { Dialect } from "./target.js";

/** Quotes an identifier for `dialect`, doubling any embedded quote character. */
export function quoteIdentifier(dialect: Dialect, name: string): string {
  if (dialect === "mysql") return `\`${name.replaceAll("`", "``")}\``;
  return `"${name.replaceAll('"', '""')}"`;
}

/** `DROP TABLE IF EXISTS` for `table`. */
export function dropTableSql(dialect: Dialect, table: string): string {
  return `DROP TABLE IF EXISTS ${quoteIdentifier(dialect, table)}`;
}

/**
 * A statement that refreshes the planner's statistics of a table (`ANALYZE`; MySQL `ANALYZE
 * TABLE`), as a table in service has them: without them a freshly filled table is planned as if
 * it were empty.
 */
export function analyzeTableSql(dialect: Dialect, table: string): string {
  const name = quoteIdentifier(dialect, table);
  return dialect === "mysql" ? `ANALYZE TABLE ${name}` : `ANALYZE ${name}`;
}

/** A statement that lists the columns of a table (parameter: the table's name) as rows `{ name }`. */
export function columnListSql(dialect: Dialect): string {
  switch (dialect) {
    case "sqlite":
      return "SELECT name AS name FROM pragma_table_info(?)";
    case "postgres":
      return "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position";
    case "mysql":
      return "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position";
  }
}

/**
 * A statement that lists the columns of a table with their types (parameter: the table's name)
 * as rows `{ name, type }`: SQLite's declared type, PostgreSQL's `udt_name` (`int8`, `jsonb`,
 * `timestamptz` …), MySQL's `data_type` (`bigint`, `json`, `datetime` …).
 */
export function columnTypesSql(dialect: Dialect): string {
  switch (dialect) {
    case "sqlite":
      return "SELECT name AS name, type AS type FROM pragma_table_info(?)";
    case "postgres":
      return "SELECT column_name AS name, udt_name AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position";
    case "mysql":
      return "SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position";
  }
}

/**
 * A statement that lists the indexes of a table (parameter: the table's name) as rows
 * `{ name, col }`, one per indexed column, in index then column order.
 */
export function indexColumnsSql(dialect: Dialect): string {
  switch (dialect) {
    case "sqlite":
      return "SELECT il.name AS name, ii.name AS col FROM pragma_index_list(?) AS il JOIN pragma_index_info(il.name) AS ii ORDER BY il.name, ii.seqno";
    case "postgres":
      return "SELECT i.relname AS name, a.attname AS col FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace n ON n.oid = t.relnamespace CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum WHERE n.nspname = current_schema() AND t.relname = $1 ORDER BY i.relname, k.ord";
    case "mysql":
      return "SELECT index_name AS name, column_name AS col FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? ORDER BY index_name, seq_in_index";
  }
}

/**
 * A statement that lists a table's storage options (parameter: the table's name) as rows
 * `{ option }` (`fillfactor=45`): PostgreSQL only, the one dialect whose schema sets any.
 */
export function storageOptionsSql(): string {
  return "SELECT unnest(c.reloptions) AS option FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = $1";
}

/** `ALTER TABLE … SET (fillfactor = …)` (PostgreSQL): pages written from then on keep that fill. */
export function setFillfactorSql(table: string, fillfactor: number): string {
  return `ALTER TABLE ${quoteIdentifier("postgres", table)} SET (fillfactor = ${fillfactor});`;
}

/** `ALTER TABLE … ADD COLUMN …` with the column's definition as the driver's schema writes it. */
export function addColumnSql(dialect: Dialect, table: string, column: string, definition: string): string {
  const rest = definition === "" ? "" : ` ${definition}`;
  return `ALTER TABLE ${quoteIdentifier(dialect, table)} ADD COLUMN ${quoteIdentifier(dialect, column)}${rest};`;
}

/**
 * The statement that changes a column to the type the schema gives it, or `undefined` where the
 * database cannot (SQLite: the table must be rebuilt).
 */
export function changeColumnTypeSql(
  dialect: Dialect,
  table: string,
  column: string,
  type: string,
  definition: string,
): string | undefined {
  const t = quoteIdentifier(dialect, table);
  const c = quoteIdentifier(dialect, column);
  switch (dialect) {
    case "sqlite":
      return undefined;
    case "postgres":
      return `ALTER TABLE ${t} ALTER COLUMN ${c} TYPE ${type} USING ${c}::${type};`;
    case "mysql":
      return `ALTER TABLE ${t} MODIFY COLUMN ${c} ${definition};`;
  }
}

/**
 * `CREATE INDEX` for the claim-order index of a live table. PostgreSQL builds it `CONCURRENTLY`,
 * so the queue's writes go on while it builds (MySQL/MariaDB add an index online by default).
 */
export function createIndexSql(dialect: Dialect, table: string, index: string, columnList: string): string {
  const how =
    dialect === "mysql" ? "" : dialect === "postgres" ? "CONCURRENTLY IF NOT EXISTS " : "IF NOT EXISTS ";
  return `CREATE INDEX ${how}${quoteIdentifier(dialect, index)} ON ${quoteIdentifier(dialect, table)} (${columnList});`;
}

/**
 * The statements that replace an index named `index` with the claim-order index (the live one has
 * lost columns, so it no longer leads with the claim order), in the order they run.
 */
export function replaceIndexSql(
  dialect: Dialect,
  table: string,
  index: string,
  columnList: string,
): readonly string[] {
  const i = quoteIdentifier(dialect, index);
  const t = quoteIdentifier(dialect, table);
  switch (dialect) {
    case "mysql":
      return [`ALTER TABLE ${t} DROP INDEX ${i}, ADD INDEX ${i} (${columnList});`];
    case "postgres":
      return [`DROP INDEX CONCURRENTLY IF EXISTS ${i};`, createIndexSql(dialect, table, index, columnList)];
    case "sqlite":
      return [`DROP INDEX IF EXISTS ${i};`, createIndexSql(dialect, table, index, columnList)];
  }
}
