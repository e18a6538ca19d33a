/**
 * Compares a live table with its description: the columns and claim-order index the driver's
 * recommended schema (`driver.schemaSql`) gives the table, against what the database holds.
 * Used by `rowclaim check` (report and exit code) and `rowclaim schema --apply` (create the table,
 * or run the fixes).
 *
 * The expected columns and index are read from the driver's own `CREATE TABLE` text, so the
 * check can never disagree with what `rowclaim schema` prints.
 *
 * @module
 */
import type { AdminConnection } from "./admin-connection.js";
import {
  addColumnSql,
  changeColumnTypeSql,
  columnTypesSql,
  createIndexSql,
  indexColumnsSql,
  replaceIndexSql,
  setFillfactorSql,
  storageOptionsSql,
} from "./admin-sql.js";
import type { Dialect } from "./target.js";

/** A column as the recommended schema defines it. */
export interface ExpectedColumn {
  /** The column's name. */
  readonly name: string;
  /** Its type, as written (`timestamptz`, `DATETIME(6)`, `INTEGER`); empty where the schema declares none (SQLite's extra columns). */
  readonly type: string;
  /** Its whole definition after the name (type and constraints). */
  readonly definition: string;
}

/** What the recommended schema of a table holds. */
export interface ExpectedSchema {
  /** The columns, in order. */
  readonly columns: readonly ExpectedColumn[];
  /** The claim-order index: its name, its columns in order, and its column list as written. */
  readonly index:
    | { readonly name: string; readonly columns: readonly string[]; readonly list: string }
    | undefined;
  /** The table's fillfactor (`WITH (fillfactor = …)`, PostgreSQL), where the schema sets one. */
  readonly fillfactor: number | undefined;
}

/** One difference between the live table and its description. */
export type SchemaProblem =
  | { readonly kind: "missingTable" }
  | { readonly kind: "missingColumn"; readonly column: string }
  | {
      readonly kind: "wrongType";
      readonly column: string;
      readonly expected: string;
      readonly actual: string;
    }
  | { readonly kind: "missingIndex"; readonly index: string; readonly columns: readonly string[] };

/**
 * What a fix does to a live table: `adds` creates a table, a column or an index (a PostgreSQL
 * index is built `CONCURRENTLY`, so writes go on), replaces a claim-order index that lost its
 * columns, or sets a storage option (PostgreSQL's fillfactor: nothing is rewritten); `rewrites`
 * changes a column's type, which rewrites the table under an exclusive lock; `manual` is a
 * comment for what no statement can do (SQLite cannot change a column's type).
 */
export type FixEffect = "adds" | "rewrites" | "manual";

/** One statement of a fix, and what it does to the table. */
export interface Fix {
  /** The statement (or, for `manual`, an SQL comment saying what to do). */
  readonly sql: string;
  readonly effect: FixEffect;
}

/**
 * A difference that changes no behaviour, only speed: the table's fillfactor is not the one the
 * schema sets (a table made before it did). `check` reports it without failing; `schema
 * --apply` runs its fix, which rewrites nothing (pages written from then on keep that fill).
 */
export interface SchemaAdvice {
  readonly kind: "fillfactor";
  readonly expected: number;
  readonly actual: number;
}

/** The result of a check: the problems found and the statements that would fix them. */
export interface TableCheck {
  /** Every difference found; empty when the table matches its description. */
  readonly problems: readonly SchemaProblem[];
  /** Differences in speed only (see {@link SchemaAdvice}). */
  readonly advice: readonly SchemaAdvice[];
  /** The statements that fix the problems, then those that follow the advice, in the order they must run. */
  readonly fixes: readonly Fix[];
  /** Whether every problem has a fix statement (no `manual` fix). */
  readonly fixable: boolean;
}

const identifier = String.raw`(?:"((?:[^"]|"")+)"|\x60((?:[^\x60]|\x60\x60)+)\x60)`;
// A column line; SQLite's extra columns are written without a type (`"account",`).
const columnLine = new RegExp(`^\\s+${identifier}(?:\\s+(.+?))?,?\\s*$`);
const mysqlKeyLine = new RegExp(`^\\s+KEY\\s+${identifier}\\s+\\((.+)\\),?\\s*$`);
const createIndexLine = new RegExp(`^CREATE INDEX (?:IF NOT EXISTS )?${identifier} ON .+? \\((.+)\\);?\\s*$`);

function unquote(double: string | undefined, back: string | undefined): string {
  if (double !== undefined) return double.replaceAll('""', '"');
  return (back ?? "").replaceAll("``", "`");
}

/** The column names of an index column list as written (`"queue", "run_at" NULLS FIRST`). */
function listColumns(list: string): string[] {
  const pattern = new RegExp(identifier, "g");
  return [...list.matchAll(pattern)].map((match) => unquote(match[1], match[2]));
}

/** Reads the columns and claim-order index out of a driver's `schemaSql` text. */
export function parseSchemaSql(sql: string): ExpectedSchema {
  const columns: ExpectedColumn[] = [];
  let index: ExpectedSchema["index"];
  let fillfactor: number | undefined;
  let inTable = false;
  for (const line of sql.split("\n")) {
    if (/^CREATE TABLE/i.test(line)) {
      inTable = true;
      continue;
    }
    if (inTable && /^\)/.test(line)) {
      inTable = false;
      const fill = /fillfactor\s*=\s*(\d+)/i.exec(line);
      if (fill !== null) fillfactor = Number(fill[1]);
      continue;
    }
    if (inTable) {
      const key = mysqlKeyLine.exec(line);
      if (key !== null) {
        const list = key[3] as string;
        index = { name: unquote(key[1], key[2]), columns: listColumns(list), list };
        continue;
      }
      const column = columnLine.exec(line);
      if (column !== null) {
        const definition = (column[3] ?? "").trim();
        const type =
          /^[A-Za-z]+(?:\s+(?:precision|varying))?(?:\(\d+(?:,\s*\d+)?\))?/.exec(definition)?.[0] ??
          definition;
        columns.push({ name: unquote(column[1], column[2]), type, definition });
      }
      continue;
    }
    const create = createIndexLine.exec(line.trim());
    if (create !== null) {
      const list = create[3] as string;
      index = { name: unquote(create[1], create[2]), columns: listColumns(list), list };
    }
  }
  return { columns, index, fillfactor };
}

/**
 * The family of a column type, so that types that work the same compare equal (`int4` and
 * `int8`, `varchar` and `text`; MariaDB reports a JSON column as `longtext`).
 */
export function typeFamily(dialect: Dialect, type: string): string {
  const t = type
    .toLowerCase()
    .replace(/\(.*\)/, "")
    .trim();
  if (dialect === "sqlite") {
    if (t.includes("int")) return "integer";
    if (t.includes("char") || t.includes("clob") || t.includes("text")) return "text";
    if (t === "" || t.includes("blob")) return "blob";
    if (t.includes("real") || t.includes("floa") || t.includes("doub")) return "real";
    return "numeric";
  }
  if (/^(small|big)?serial$|^int[248]?$|^integer$|^(tiny|small|medium|big)?int$/.test(t)) return "integer";
  if (/^(character varying|varchar|char|character|text|tinytext|mediumtext|longtext|bpchar)$/.test(t))
    return dialect === "mysql" && t === "longtext" ? "longtext" : "text";
  if (t === "timestamptz" || t === "timestamp with time zone") return "timestamptz";
  if (t === "timestamp" || t === "timestamp without time zone")
    return dialect === "mysql" ? "datetime" : "timestamp";
  if (t === "datetime") return "datetime";
  if (/^(bytea|blob|tinyblob|mediumblob|longblob|binary|varbinary)$/.test(t)) return "bytes";
  if (t === "json" || t === "jsonb") return "json";
  return t;
}

function sameFamily(dialect: Dialect, expected: string, actual: string): boolean {
  // A column the schema declares without a type (SQLite) takes any type.
  if (expected === "") return true;
  const want = typeFamily(dialect, expected);
  const have = typeFamily(dialect, actual);
  if (want === have) return true;
  // MariaDB keeps JSON as LONGTEXT (with a json_valid check); a MySQL TEXT column also holds JSON text.
  if (want === "json" && have === "longtext") return true;
  if (want === "text" && have === "longtext") return true;
  return false;
}

/** Reads the live table and compares it with `schemaSql` (the driver's recommended schema for it). */
export async function checkTable(
  connection: AdminConnection,
  table: string,
  schemaSql: string,
): Promise<TableCheck> {
  const dialect = connection.dialect;
  const expected = parseSchemaSql(schemaSql);
  const liveColumns = await connection.query(columnTypesSql(dialect), [table]);
  if (liveColumns.length === 0) {
    const create = { sql: schemaSql.trim(), effect: "adds" } as const;
    return { problems: [{ kind: "missingTable" }], advice: [], fixes: [create], fixable: true };
  }
  const types = new Map(liveColumns.map((row) => [String(row.name), String(row.type ?? "")]));
  const problems: SchemaProblem[] = [];
  const fixes: Fix[] = [];
  for (const column of expected.columns) {
    const actual = types.get(column.name);
    if (actual === undefined) {
      problems.push({ kind: "missingColumn", column: column.name });
      fixes.push({ sql: addColumnSql(dialect, table, column.name, column.definition), effect: "adds" });
    } else if (!sameFamily(dialect, column.type, actual)) {
      problems.push({ kind: "wrongType", column: column.name, expected: column.type, actual });
      const fix = changeColumnTypeSql(dialect, table, column.name, column.type, column.definition);
      fixes.push(
        fix === undefined
          ? {
              sql: `-- SQLite cannot change the type of "${column.name}" to ${column.type}: create a new table with \`rowclaim schema\`, copy the rows, and rename it.`,
              effect: "manual",
            }
          : { sql: fix, effect: "rewrites" },
      );
    }
  }
  if (expected.index !== undefined) {
    const index = expected.index;
    const live = new Map<string, string[]>();
    for (const row of await connection.query(indexColumnsSql(dialect), [table])) {
      const name = String(row.name);
      const list = live.get(name) ?? [];
      list.push(String(row.col));
      live.set(name, list);
    }
    const covered = [...live.values()].some((columns) =>
      index.columns.every((column, position) => columns[position] === column),
    );
    if (!covered) {
      problems.push({ kind: "missingIndex", index: index.name, columns: index.columns });
      // An index of that name that no longer leads with the claim order (MariaDB keeps an index
      // with the columns left after one is dropped) is replaced: creating it again would fail.
      const statements = live.has(index.name)
        ? replaceIndexSql(dialect, table, index.name, index.list)
        : [createIndexSql(dialect, table, index.name, index.list)];
      for (const sql of statements) fixes.push({ sql, effect: "adds" });
    }
  }
  const advice = await fillfactorAdvice(connection, table, expected.fillfactor);
  for (const item of advice) fixes.push({ sql: setFillfactorSql(table, item.expected), effect: "adds" });
  return { problems, advice, fixes, fixable: fixes.every((fix) => fix.effect !== "manual") };
}

/** PostgreSQL's fill where none is set. */
const DEFAULT_FILLFACTOR = 100;

/** The advice where the live table's fillfactor is not `expected` (PostgreSQL; none where the schema sets none). */
async function fillfactorAdvice(
  connection: AdminConnection,
  table: string,
  expected: number | undefined,
): Promise<SchemaAdvice[]> {
  if (expected === undefined || connection.dialect !== "postgres") return [];
  let actual = DEFAULT_FILLFACTOR;
  for (const row of await connection.query(storageOptionsSql(), [table])) {
    const fill = /^fillfactor=(\d+)$/.exec(String(row.option));
    if (fill !== null) actual = Number(fill[1]);
  }
  return actual === expected ? [] : [{ kind: "fillfactor", expected, actual }];
}

/** One line for people about a piece of advice. */
export function describeAdvice(table: string, advice: SchemaAdvice): string {
  return `table ${table}: fillfactor ${advice.actual}, where ${advice.expected} is recommended: a claim rewrites each row it takes, and with room on the row's page that write adds no index entries (pages written from then on keep the new fill)`;
}

/** One line for people about a problem. */
export function describeProblem(table: string, problem: SchemaProblem): string {
  switch (problem.kind) {
    case "missingTable":
      return `table ${table} does not exist`;
    case "missingColumn":
      return `table ${table}: column ${problem.column} is missing`;
    case "wrongType":
      return `table ${table}: column ${problem.column} is ${problem.actual}, the description needs ${problem.expected}`;
    case "missingIndex":
      return `table ${table}: no index leads with the claim order (${problem.columns.join(", ")}); claims scan the table`;
  }
}
