/**
 * The few SQL statements the memory database runs, for tests that change a table behind the
 * drivers' backs the way they would with a second connection to a server: the driver's own
 * `schemaSql` output, `DROP TABLE [IF EXISTS] t`, `DELETE FROM t [WHERE c = v [AND …]]`,
 * `UPDATE t SET c = v [, …] [WHERE c = v [AND …]]` and `CREATE [UNIQUE] INDEX i ON t (c, …)`.
 * Values are numbers, `'strings'` and `NULL`; identifiers are bare words or `"quoted"`. Anything
 * else is refused with an error saying what the memory database runs. It is no SQL engine.
 *
 * @module
 */
import type { MemoryColumn, MemoryDatabase, MemoryRow, MemoryTable } from "./store.js";
import { sameValue } from "./store.js";

type Token =
  | { readonly kind: "word"; readonly text: string }
  | { readonly kind: "ident"; readonly text: string }
  | { readonly kind: "value"; readonly value: unknown }
  | { readonly kind: "punct"; readonly text: string };

const runs =
  "The memory database runs only CREATE TABLE (schemaSql), DROP TABLE, DELETE FROM, UPDATE … SET and CREATE [UNIQUE] INDEX, with numbers, 'strings' and NULL as values.";

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const quoted = (quote: string): string => {
    let text = "";
    i += 1;
    for (;;) {
      if (i >= sql.length) throw new Error(`memory database: an unclosed ${quote} in: ${sql}`);
      const ch = sql[i] as string;
      if (ch === quote) {
        if (sql[i + 1] === quote) {
          text += quote;
          i += 2;
          continue;
        }
        i += 1;
        return text;
      }
      text += ch;
      i += 1;
    }
  };
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (/\s/.test(ch)) i += 1;
    else if (sql.startsWith("--", i)) {
      while (i < sql.length && sql[i] !== "\n") i += 1;
    } else if (ch === '"') tokens.push({ kind: "ident", text: quoted('"') });
    else if (ch === "'") tokens.push({ kind: "value", value: quoted("'") });
    else if (/[0-9-]/.test(ch)) {
      const match = /^-?\d+(\.\d+)?/.exec(sql.slice(i));
      if (match === null) throw new Error(`memory database: cannot read "${sql.slice(i, i + 20)}". ${runs}`);
      tokens.push({ kind: "value", value: Number(match[0]) });
      i += match[0].length;
    } else if (/[A-Za-z_]/.test(ch)) {
      const match = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(sql.slice(i)) as RegExpExecArray;
      const text = match[0];
      tokens.push(text.toUpperCase() === "NULL" ? { kind: "value", value: null } : { kind: "word", text });
      i += text.length;
    } else if ("(),;=.".includes(ch)) {
      tokens.push({ kind: "punct", text: ch });
      i += 1;
    } else throw new Error(`memory database: cannot read "${sql.slice(i, i + 20)}". ${runs}`);
  }
  return tokens;
}

/** Reads tokens of one statement. */
class Reader {
  readonly #tokens: readonly Token[];
  #at = 0;

  constructor(tokens: readonly Token[]) {
    this.#tokens = tokens;
  }

  get done(): boolean {
    return this.#at >= this.#tokens.length;
  }

  /** Consumes `words` if they come next; whether they did. */
  accept(...words: string[]): boolean {
    for (let n = 0; n < words.length; n += 1) {
      const token = this.#tokens[this.#at + n];
      if (token?.kind !== "word" || token.text.toUpperCase() !== words[n]) return false;
    }
    this.#at += words.length;
    return true;
  }

  expect(...words: string[]): void {
    if (!this.accept(...words)) throw new Error(`memory database: expected ${words.join(" ")}. ${runs}`);
  }

  acceptPunct(text: string): boolean {
    const token = this.#tokens[this.#at];
    if (token?.kind !== "punct" || token.text !== text) return false;
    this.#at += 1;
    return true;
  }

  expectPunct(text: string): void {
    if (!this.acceptPunct(text)) throw new Error(`memory database: expected "${text}". ${runs}`);
  }

  identifier(): string {
    const token = this.#tokens[this.#at];
    if (token?.kind !== "word" && token?.kind !== "ident") {
      throw new Error(`memory database: expected a name. ${runs}`);
    }
    this.#at += 1;
    return token.text;
  }

  /** `name` or `schema.name`. */
  tableName(): { readonly name: string; readonly schema: string | undefined } {
    const first = this.identifier();
    if (!this.acceptPunct(".")) return { name: first, schema: undefined };
    return { name: this.identifier(), schema: first };
  }

  value(): unknown {
    const token = this.#tokens[this.#at];
    if (token?.kind !== "value") throw new Error(`memory database: expected a value. ${runs}`);
    this.#at += 1;
    return token.value;
  }

  /** Skips tokens until a `,` or `)` outside parentheses, returning the words skipped. */
  skipToListEnd(): Token[] {
    const skipped: Token[] = [];
    let depth = 0;
    for (;;) {
      const token = this.#tokens[this.#at];
      if (token === undefined) return skipped;
      if (token.kind === "punct" && depth === 0 && (token.text === "," || token.text === ")")) return skipped;
      if (token.kind === "punct" && token.text === "(") depth += 1;
      if (token.kind === "punct" && token.text === ")") depth -= 1;
      skipped.push(token);
      this.#at += 1;
    }
  }

  end(): void {
    if (!this.done) throw new Error(`memory database: unexpected text after the statement. ${runs}`);
  }
}

function splitStatements(tokens: readonly Token[]): Token[][] {
  const statements: Token[][] = [[]];
  for (const token of tokens) {
    if (token.kind === "punct" && token.text === ";") statements.push([]);
    else statements[statements.length - 1]?.push(token);
  }
  return statements.filter((statement) => statement.length > 0);
}

function existing(database: MemoryDatabase, name: string, schema: string | undefined): MemoryTable {
  const table = database.table(name, schema);
  if (table === undefined) throw new Error(`memory database: table "${name}" does not exist.`);
  return table;
}

/** `c = v [AND c = v …]`, or every row when there is no WHERE. */
function whereClause(reader: Reader, table: MemoryTable): (row: MemoryRow) => boolean {
  if (!reader.accept("WHERE")) return () => true;
  const conditions: { column: string; value: unknown }[] = [];
  do {
    const column = reader.identifier();
    if (!table.columns.has(column))
      throw new Error(`memory database: "${table.name}" has no column "${column}".`);
    reader.expectPunct("=");
    conditions.push({ column, value: reader.value() });
  } while (reader.accept("AND"));
  return (row) => conditions.every(({ column, value }) => sameValue(row[column], value));
}

function createTable(reader: Reader, database: MemoryDatabase): void {
  const ifNotExists = reader.accept("IF", "NOT", "EXISTS");
  const { name, schema } = reader.tableName();
  reader.expectPunct("(");
  const columns: MemoryColumn[] = [];
  do {
    const column = reader.identifier();
    const words = reader.skipToListEnd();
    const upper = words.map((token) => (token.kind === "word" ? token.text.toUpperCase() : ""));
    const at = upper.indexOf("DEFAULT");
    const fallback = at === -1 ? undefined : words[at + 1];
    columns.push({
      name: column,
      ...(upper[0] === "SERIAL" ? { serial: true } : {}),
      ...(fallback?.kind === "value" ? { default: fallback.value } : {}),
    });
  } while (reader.acceptPunct(","));
  reader.expectPunct(")");
  reader.end();
  database.createTable(name, columns, { ...(schema === undefined ? {} : { schema }), ifNotExists });
}

function createIndex(reader: Reader, database: MemoryDatabase, unique: boolean): void {
  reader.accept("IF", "NOT", "EXISTS");
  const index = reader.identifier();
  reader.expect("ON");
  const { name, schema } = reader.tableName();
  reader.expectPunct("(");
  const columns: string[] = [];
  do columns.push(reader.identifier());
  while (reader.acceptPunct(","));
  reader.expectPunct(")");
  reader.end();
  const table = existing(database, name, schema);
  if (unique) database.addUnique(table, index, columns);
}

function deleteFrom(reader: Reader, database: MemoryDatabase): void {
  const { name, schema } = reader.tableName();
  const table = existing(database, name, schema);
  const matches = whereClause(reader, table);
  reader.end();
  for (const [key, row] of [...table.rows]) if (matches(row)) table.rows.delete(key);
}

function update(reader: Reader, database: MemoryDatabase): void {
  const { name, schema } = reader.tableName();
  const table = existing(database, name, schema);
  reader.expect("SET");
  const sets: Record<string, unknown> = {};
  do {
    const column = reader.identifier();
    if (!table.columns.has(column)) throw new Error(`memory database: "${name}" has no column "${column}".`);
    reader.expectPunct("=");
    sets[column] = reader.value();
  } while (reader.acceptPunct(","));
  const matches = whereClause(reader, table);
  reader.end();
  for (const [key, row] of [...table.rows]) {
    if (!matches(row)) continue;
    const next = { ...row, ...sets };
    table.check(next, key);
    table.rows.set(key, next);
  }
}

/**
 * Runs `sql` (one or more statements separated by `;`) on the memory database, as a test's own
 * connection would on a server. See the module's note for the statements it runs.
 *
 * @throws {Error} for a statement it does not run, or one naming a table or column that does not exist.
 * @throws {ConstraintError} when an `UPDATE` breaks a constraint.
 */
export function executeSql(database: MemoryDatabase, sql: string): void {
  for (const tokens of splitStatements(tokenize(sql))) {
    const reader = new Reader(tokens);
    if (reader.accept("CREATE", "TABLE")) createTable(reader, database);
    else if (reader.accept("CREATE", "UNIQUE", "INDEX")) createIndex(reader, database, true);
    else if (reader.accept("CREATE", "INDEX")) createIndex(reader, database, false);
    else if (reader.accept("DROP", "TABLE")) {
      const ifExists = reader.accept("IF", "EXISTS");
      const { name, schema } = reader.tableName();
      reader.end();
      if (!ifExists) existing(database, name, schema);
      database.dropTable(name, schema);
    } else if (reader.accept("DELETE", "FROM")) deleteFrom(reader, database);
    else if (reader.accept("UPDATE")) update(reader, database);
    else throw new Error(`memory database: cannot run "${sql.slice(0, 60)}". ${runs}`);
  }
}
