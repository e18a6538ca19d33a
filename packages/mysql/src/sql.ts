/**
 * Every SQL statement of the MySQL/MariaDB driver, and the backtick quoting of identifiers.
 * Statement text is built once per subscription (when `open()` runs) from the table's quoted
 * identifiers; values always travel as parameters. Where MySQL and MariaDB differ (publish
 * returns ids with `INSERT … RETURNING` on MariaDB, from `insertId` on MySQL; the error a
 * `NOWAIT` read raises), the variant is picked by {@link ServerFamily}.
 *
 * Published as `@rowclaim/mysql/sql`, for tools and for drivers on another MySQL/MariaDB client
 * (the `mariadb` connector, …): the per-table statements ({@link TableStatements},
 * {@link SettlementStatements}, {@link insertStatement}, {@link createTableSql}, …), the
 * transaction and lock statements, and the quoting ({@link quoteIdentifier}, {@link quoteTable},
 * {@link quoteDefinedTable}). It imports nothing of `mysql2`. Its exports follow the driver's
 * version, but are not yet a stable contract: pin the version you build on.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { DeclarationError, type IsolationLevel, type TableDefinition } from "@rowclaim/core";
import { type AckSettlement, ADVISORY_SLOT_SEPARATOR, type PublishRow } from "@rowclaim/core/driver";
import type { ServerFamily } from "./version.js";

/** A statement's text and the values of its placeholders. */
export interface Bound {
  readonly sql: string;
  readonly values: unknown[];
}

/**
 * Quotes an identifier in backticks, doubling any backtick inside it.
 *
 * @throws {DeclarationError} for a name MySQL cannot hold: empty, longer than 64 characters,
 * holding a NUL character, or ending with a space.
 */
export function quoteIdentifier(name: string, table?: string): string {
  const problem =
    name.length === 0
      ? "is empty"
      : [...name].length > 64
        ? "is longer than 64 characters"
        : name.includes("\u0000")
          ? "holds a NUL character"
          : name.endsWith(" ")
            ? "ends with a space"
            : undefined;
  if (problem !== undefined) {
    throw new DeclarationError(
      `${table === undefined ? "" : `Table "${table}": `}the identifier ${JSON.stringify(name)} ${problem}, which MySQL and MariaDB do not allow in a table, column or database name. Rename it.`,
      table === undefined ? {} : { table },
    );
  }
  return `\`${name.replaceAll("`", "``")}\``;
}

/** The quoted, schema-qualified name of a table (`schema`.`name`, or `name` in the connection's database). */
export function quoteTable(name: string, schema: string | undefined, tableForErrors: string = name): string {
  const quoted = quoteIdentifier(name, tableForErrors);
  return schema === undefined ? quoted : `${quoteIdentifier(schema, tableForErrors)}.${quoted}`;
}

/** The quoted name of a described table. */
export function quoteDefinedTable(table: TableDefinition): string {
  return quoteTable(table.name, table.schema);
}

const levels: Readonly<Record<IsolationLevel, string>> = {
  "read uncommitted": "READ UNCOMMITTED",
  "read committed": "READ COMMITTED",
  "repeatable read": "REPEATABLE READ",
  serializable: "SERIALIZABLE",
};

/** Transaction control. */
export const transactionSql = Object.freeze({
  /** Sets the level of the next transaction only. */
  isolation: (level: IsolationLevel): string => `SET TRANSACTION ISOLATION LEVEL ${levels[level]}`,
  /** Sets the session's default level (the driver's own pool, once per session). */
  sessionIsolation: (level: IsolationLevel): string =>
    `SET SESSION TRANSACTION ISOLATION LEVEL ${levels[level]}`,
  begin: "START TRANSACTION",
  commit: "COMMIT",
  /** Commits and at once begins the next transaction, at the same isolation level (a row lock batch's end carrying the next claim). */
  commitAndChain: "COMMIT AND CHAIN",
  rollback: "ROLLBACK",
});

/**
 * MariaDB: `statements` run as one compound statement (`BEGIN NOT ATOMIC …; END`, MariaDB's
 * anonymous block, outside any stored program), in order, in one round trip, without the
 * connection's multi-statement flag. A `SELECT` inside returns its rows as the first result set.
 * An error stops the block at the failing statement; those before it stay done.
 */
export function compoundSql(statements: readonly string[]): string {
  return `BEGIN NOT ATOMIC ${statements.map((statement) => `${statement};`).join(" ")} END`;
}

/**
 * MariaDB: `statements` as one compound statement that is also one transaction: all of them
 * commit together, or (an error, a lost session) none does; the error is raised again as it
 * was (`RESIGNAL`), and the session is left outside any transaction either way.
 */
export function atomicCompoundSql(statements: readonly string[]): string {
  return compoundSql([
    "DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END",
    transactionSql.begin,
    ...statements,
    transactionSql.commit,
  ]);
}

/**
 * The index hint every statement that finds rows by a list of ids carries: the optimizer plans
 * `id IN (…)` as a scan of the whole table once the table is small next to the list, and a
 * locking scan waits on (and deadlocks with) rows other transactions hold. `FORCE INDEX` makes
 * it look the ids up by primary key (MariaDB 10.11, measured with `EXPLAIN` on tables of 10 to
 * 3,000 rows). `UPDATE`, `SELECT` and, on MySQL, the multi-table form of `DELETE` take it;
 * MariaDB's `DELETE` ignores it, so there coalesced deletes are one `DELETE … WHERE id = ?` per
 * row inside one compound statement.
 */
const byPrimaryKey = " FORCE INDEX (PRIMARY)";

/** Statements to run in order in one round trip, and the values of all their placeholders, in order. */
export interface BoundSteps {
  readonly statements: readonly string[];
  readonly values: unknown[];
}

/**
 * The session variable a compound statement that commits midway sets right after its commit, to
 * a number unique in the process: read back after an error, it says whether the commit happened.
 */
export const chainMarkSql = Object.freeze({
  set: "SET @rowclaim_chain = ?",
  read: "SELECT @rowclaim_chain",
});

/** Server facts read at open: version, the auto-increment step (publish ids on MySQL), the connection's database. */
export const serverInfoSql = "SELECT VERSION(), @@auto_increment_increment, DATABASE(), @@max_allowed_packet";

/** The columns a table has, for the startup check. Values: schema (or null for the connection's database), table name. */
export const columnsSql =
  "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?";

/** A table's indexes, column by column in index order. Values: the schema (or null), the table. */
export const indexColumnsSql =
  "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX";

/**
 * The columns an index must begin with to serve claims in claim order: the group (compared for
 * equality), then priority, runAt and id (the `ORDER BY`). `schemaSql` creates exactly this index.
 */
export function claimOrderColumns(table: TableDefinition): string[] {
  const c = table.columns;
  return [c.group, c.priority, c.runAt, c.id].filter((column): column is string => column !== undefined);
}

/**
 * Advisory lock functions. Values: the lock name. Each answers under a fixed column alias:
 * mysql2 sends the name inside the statement's text, and without an alias the column would be
 * named after it (`GET_LOCK('db.key', 0)`), so every distinct key would make mysql2 compile a
 * new row parser.
 */
export const lockSql = Object.freeze({
  /** 1: locked; 0: another session holds it; never waits. */
  get: "SELECT GET_LOCK(?, 0) AS `locked`",
  /** 1: released; 0 or NULL: this session did not hold it. */
  release: "SELECT RELEASE_LOCK(?) AS `released`",
  /** The session id holding the name, or NULL. */
  usedBy: "SELECT IS_USED_LOCK(?) AS `holder`",
});

/** How a form's settlements are written. */
export interface SettlementStyle {
  /** Row lock form: every settlement that keeps the row writes `attempt + 1`. */
  readonly countAttempt: boolean;
  /** Lease form: every settlement applies only `WHERE lockedUntil = <token>`. */
  readonly tokenGuard: boolean;
  /**
   * Advisory lock form: every settlement applies only to a row still unfinished (`processedAt IS
   * NULL`, on a table with processedAt), so one that another claim or an operator finished
   * meanwhile matches nothing and the settlement fails.
   */
  readonly unfinishedGuard?: boolean;
}

/**
 * The statements of one subscription (table + group), built once when it opens. Methods only
 * put values beside the prebuilt text.
 */
export class TableStatements {
  /** The described columns, quoted, in `allColumns` order: what every row read selects. */
  readonly selectList: string;
  /** The quoted table. */
  readonly target: string;
  readonly #table: TableDefinition;
  readonly #q: (column: string) => string;
  readonly #id: string;
  readonly #orderBy: string;
  readonly #claimable: string;
  readonly #groupValues: unknown[];
  readonly #scope: string;
  readonly #hasDue: boolean;
  readonly #hasFree: boolean;
  readonly #dueExpr: string;

  readonly #fifoKey: string;

  /** `FORCE INDEX (…)` naming the claim-order index, or empty where the table has none. */
  readonly #claimIndexHint: string;

  /**
   * @param claimIndex an index of the table that begins with the claim order
   * ({@link claimOrderColumns}): locking claims name it (`FORCE INDEX`), so that InnoDB reads
   * rows in claim order and stops at the limit. Without it the optimizer may scan and sort the
   * whole table (it does on small ones), and a locking read then locks every due row it sorted,
   * not only those the claim returns: a row lock batch of one would hold every due row until
   * its commit.
   */
  constructor(table: TableDefinition, group: string | null, claimIndex?: string) {
    this.#claimIndexHint =
      claimIndex === undefined ? "" : ` FORCE INDEX (${quoteIdentifier(claimIndex, table.name)})`;
    this.#fifoKey = `rowclaim-fifo:${table.name}:${JSON.stringify(group)}`;
    this.#table = table;
    const q = (column: string): string => quoteIdentifier(column, table.name);
    this.#q = q;
    const c = table.columns;
    this.target = quoteDefinedTable(table);
    this.#id = q(c.id);
    this.selectList = table.allColumns.map(q).join(", ");
    this.#orderBy = `ORDER BY ${[c.priority, c.runAt, c.id]
      .filter((column): column is string => column !== undefined)
      .map((column) => `${q(column)} ASC`)
      .join(", ")}`;
    const groupSql =
      c.group === undefined ? undefined : group === null ? `${q(c.group)} IS NULL` : `${q(c.group)} = ?`;
    this.#groupValues = c.group !== undefined && group !== null ? [group] : [];
    const unfinished = c.processedAt === undefined ? undefined : `${q(c.processedAt)} IS NULL`;
    this.#hasDue = c.runAt !== undefined;
    this.#dueExpr = c.runAt === undefined ? "1" : `(${q(c.runAt)} IS NULL OR ${q(c.runAt)} <= ?)`;
    const due = c.runAt === undefined ? undefined : this.#dueExpr;
    this.#hasFree = c.lockedUntil !== undefined;
    const free =
      c.lockedUntil === undefined ? undefined : `(${q(c.lockedUntil)} IS NULL OR ${q(c.lockedUntil)} <= ?)`;
    this.#scope = and([groupSql, unfinished]);
    this.#claimable = and([groupSql, unfinished, due, free]);
  }

  /** Values of the claimable condition (group, then `now` for runAt and lockedUntil). */
  #claimableValues(now: Date): unknown[] {
    return [...this.#groupValues, ...(this.#hasDue ? [now] : []), ...(this.#hasFree ? [now] : [])];
  }

  // ---- row lock -------------------------------------------------------------------------

  /** Row lock claim: locks up to `limit` claimable rows in claim order, passing over locked ones. */
  rowLockClaim(now: Date, limit: number): Bound {
    return {
      sql: this.#memo(
        "rowLockClaimSql",
        () =>
          `SELECT ${this.selectList} FROM ${this.target}${this.#claimIndexHint} WHERE ${this.#claimable} ${this.#orderBy} LIMIT ? FOR UPDATE SKIP LOCKED`,
      ),
      values: [...this.#claimableValues(now), limit],
    };
  }

  // ---- FIFO groups ------------------------------------------------------------------------

  /**
   * The FIFO group's guard: `GET_LOCK` on a name of the table and group (lower-cased database
   * name, `.`, `rowclaim-fifo:<table>:<group as JSON>`, by its SHA-256 past 64 characters),
   * waiting up to `waitSeconds`. 1: this session holds the group. It is one lock per group, held
   * by the claim's session, so the claim locks no more rows than the head it takes.
   */
  fifoGroupLock(waitSeconds: number): Bound {
    const name = this.#fifoGuardName();
    return { sql: `SELECT GET_LOCK(${name.sql}, ?) AS \`locked\``, values: [...name.values, waitSeconds] };
  }

  /** Releases the FIFO group's guard: 1 when this session held it. */
  fifoGroupUnlock(): Bound {
    const name = this.#fifoGuardName();
    return { sql: `SELECT RELEASE_LOCK(${name.sql}) AS \`released\``, values: name.values };
  }

  #fifoGuardName(): Bound {
    const full = "CONCAT(LOWER(CONVERT(COALESCE(?, DATABASE()) USING utf8mb4)), '.', ?)";
    const values = [this.#table.schema ?? null, this.#fifoKey];
    return {
      sql: `IF(CHAR_LENGTH(${full}) > 64, SHA2(${full}, 256), ${full})`,
      values: [...values, ...values, ...values],
    };
  }

  /**
   * Row lock FIFO head, under the group's guard: locks the group's first unfinished row in claim
   * order (only that row), without waiting. Columns: id, due.
   */
  rowLockFifoGuard(now: Date): Bound {
    return {
      sql: this.#memo(
        "rowLockGuardSql",
        () =>
          `SELECT ${this.#id}, ${this.#dueExpr} FROM ${this.target} WHERE ${this.#scope} ${this.#orderBy} LIMIT 1 FOR UPDATE NOWAIT`,
      ),
      values: [...(this.#hasDue ? [now] : []), ...this.#groupValues],
    };
  }

  /** Reads rows by id (already locked or taken by this claim), in claim order. */
  readRows(ids: readonly unknown[]): Bound {
    return {
      sql: this.#memo(
        "readRowsSql",
        () => `SELECT ${this.selectList} FROM ${this.target} WHERE ${this.#id} IN (?) ${this.#orderBy}`,
      ),
      values: [ids],
    };
  }

  // ---- lease ----------------------------------------------------------------------------

  /**
   * Lease claim, first step: locks up to `limit` claimable rows in claim order, passing over
   * locked ones, and reads them whole (described columns in `allColumns` order), so that the
   * claim needs no read after its update: the driver writes the update's values into the rows.
   */
  leaseSelect(now: Date, limit: number): Bound {
    return {
      sql: this.#memo(
        "leaseSelectSql",
        () =>
          `SELECT ${this.selectList} FROM ${this.target}${this.#claimIndexHint} WHERE ${this.#claimable} ${this.#orderBy} LIMIT ? FOR UPDATE SKIP LOCKED`,
      ),
      values: [...this.#claimableValues(now), limit],
    };
  }

  /**
   * Lease claim of one row without a transaction, first step: up to `limit` claimable rows in
   * claim order, read whole, without locking them (candidates: the take decides).
   */
  leaseCandidates(now: Date, limit: number): Bound {
    return {
      sql: this.#memo(
        "leaseCandidatesSql",
        () =>
          `SELECT ${this.selectList} FROM ${this.target} WHERE ${this.#claimable} ${this.#orderBy} LIMIT ?`,
      ),
      values: [...this.#claimableValues(now), limit],
    };
  }

  /**
   * Lease claim of one row without a transaction, second step: writes the expiry and counts the
   * attempt on row `id` only while it is still claimable and its attempt is still `attempt` (the
   * value the candidate read showed; no such guard on a table without an attempt column). The
   * `UPDATE` locks the row and evaluates the condition on its latest committed version: 1
   * matched row means this claim took it, as the candidate read showed it; 0 means another claim
   * took it (or it changed) first.
   */
  leaseTakeOne(id: unknown, expiry: Date, now: Date, attempt: unknown): Bound {
    const c = this.#table.columns;
    const sql = this.#memo(
      "leaseTakeOneSql",
      () =>
        `UPDATE ${this.target} SET ${this.#q(required(c.lockedUntil))} = ?${
          c.attempt === undefined ? "" : `, ${this.#q(c.attempt)} = ${this.#q(c.attempt)} + 1`
        }${c.key === undefined ? "" : `, ${this.#q(c.key)} = NULL`} WHERE ${this.#id} = ? AND ${this.#claimable}${c.attempt === undefined ? "" : ` AND ${this.#q(c.attempt)} = ?`}`,
    );
    return {
      sql,
      values: [expiry, id, ...this.#claimableValues(now), ...(c.attempt === undefined ? [] : [attempt])],
    };
  }

  /** Lease claim, second step: writes the expiry and counts the attempt on the locked rows. */
  leaseTake(ids: readonly unknown[], expiry: Date): Bound {
    const c = this.#table.columns;
    const leaseTakeSql = this.#memo(
      "leaseTakeSql",
      () =>
        `UPDATE ${this.target}${byPrimaryKey} SET ${this.#q(required(c.lockedUntil))} = ?${
          c.attempt === undefined ? "" : `, ${this.#q(c.attempt)} = ${this.#q(c.attempt)} + 1`
        }${c.key === undefined ? "" : `, ${this.#q(c.key)} = NULL`} WHERE ${this.#id} IN (?)`,
    );
    return { sql: leaseTakeSql, values: [expiry, ids] };
  }

  /**
   * Lease FIFO head, under the group's guard: whether any unfinished row of the group holds a
   * live lease (a plain read: every claim of the group commits before it gives the guard up),
   * then the group's first unfinished row in claim order, locked (only that row). Columns: id,
   * due, in work (some row of the group holds a lease past `now`).
   */
  leaseFifoGuard(now: Date): Bound {
    const lockedUntil = this.#q(required(this.#table.columns.lockedUntil));
    const leaseGuardSql = this.#memo(
      "leaseGuardSql",
      () =>
        `SELECT ${this.#id}, ${this.#dueExpr}, EXISTS (SELECT 1 FROM ${this.target} WHERE ${this.#scope} AND ${lockedUntil} IS NOT NULL AND ${lockedUntil} > ?) FROM ${this.target} WHERE ${this.#scope} ${this.#orderBy} LIMIT 1 FOR UPDATE`,
    );
    return {
      sql: leaseGuardSql,
      values: [...(this.#hasDue ? [now] : []), ...this.#groupValues, now, ...this.#groupValues],
    };
  }

  /**
   * Lease extension, one autocommitted statement for every held row: moves each row that still
   * holds its own token to `expiry` (`id IN (…) AND (id, lockedUntil) IN ((id, token), …)`, by
   * primary key); a row holding another token is left as it is. The statement applies to all
   * the rows it matches or, failing, to none. `held` must not name an id twice.
   */
  leaseExtend(held: readonly { readonly id: unknown; readonly token: Date }[], expiry: Date): Bound {
    const lockedUntil = this.#q(required(this.#table.columns.lockedUntil));
    const extendSql = this.#memo(
      "extendSql",
      () =>
        `UPDATE ${this.target}${byPrimaryKey} SET ${lockedUntil} = ? WHERE ${this.#id} IN (?) AND (${this.#id}, ${lockedUntil}) IN (?)`,
    );
    return {
      sql: extendSql,
      values: [expiry, held.map((row) => row.id), held.map((row) => [row.id, row.token])],
    };
  }

  /**
   * Which of the rows hold `expiry` now (after an extension to it that did not match every row,
   * or whose answer was lost). Columns: id.
   */
  leaseHolding(ids: readonly unknown[], expiry: Date): Bound {
    const lockedUntil = this.#q(required(this.#table.columns.lockedUntil));
    const holdingSql = this.#memo(
      "holdingSql",
      () =>
        `SELECT ${this.#id} FROM ${this.target}${byPrimaryKey} WHERE ${this.#id} IN (?) AND ${lockedUntil} = ?`,
    );
    return { sql: holdingSql, values: [ids, expiry] };
  }

  // ---- advisory -------------------------------------------------------------------------

  /**
   * Advisory candidates: claimable rows in claim order with their lock names, leaving out
   * names another session holds. Columns: id, lock name. See {@link lockNameExpression}.
   */
  advisoryCandidates(now: Date, limit: number): Bound {
    if (this.#table.advisoryLimit > 1) return this.#slotCandidates(now, limit);
    if (this.#lockName === undefined) this.#lockName = lockNameExpression(this.#table, this.#q);
    const name = this.#lockName;
    const candidatesSql = this.#memo(
      "candidatesSql",
      () =>
        `SELECT ${this.#id}, ${name.sql} AS \`lock_name\` FROM ${this.target} WHERE ${this.#claimable} AND IS_USED_LOCK(${name.sql}) IS NULL ${this.#orderBy} LIMIT ?`,
    );
    return {
      sql: candidatesSql,
      values: [...name.values, ...this.#claimableValues(now), ...name.values, limit],
    };
  }

  /**
   * Advisory candidates for a table whose `advisoryLock.limit` n is above 1: claimable rows in
   * claim order with their full lock key (database, `.`, rendered key; never hashed), leaving out
   * keys whose n slots another session all holds (each slot's name as {@link lockNameOf} makes
   * it, computed in SQL). Columns: id, full key.
   */
  #slotCandidates(now: Date, limit: number): Bound {
    const full = lockKeyExpression(this.#table, this.#q);
    const slots = Array.from({ length: this.#table.advisoryLimit }, (_, index) => {
      const text = `CONCAT(${full.sql}, '${ADVISORY_SLOT_SEPARATOR}${index + 1}')`;
      return `IS_USED_LOCK(IF(CHAR_LENGTH(${text}) > 64, SHA2(${text}, 256), ${text})) IS NULL`;
    });
    const candidatesSql = this.#memo(
      "slotCandidatesSql",
      () =>
        `SELECT ${this.#id}, ${full.sql} AS \`lock_key\` FROM ${this.target} WHERE ${this.#claimable} AND (${slots.join(" OR ")}) ${this.#orderBy} LIMIT ?`,
    );
    const slotValues = Array.from({ length: this.#table.advisoryLimit }, () => [
      ...full.values,
      ...full.values,
      ...full.values,
    ]).flat();
    return {
      sql: candidatesSql,
      values: [...full.values, ...this.#claimableValues(now), ...slotValues, limit],
    };
  }

  /**
   * Advisory take: counts the attempt and writes NULL into the key (unique jobs) while the row
   * is still claimable. `null` for a table with neither column (the read then checks it is claimable).
   */
  advisoryTake(id: unknown, now: Date): Bound | null {
    const { attempt, key } = this.#table.columns;
    const sets: string[] = [];
    if (attempt !== undefined) sets.push(`${this.#q(attempt)} = ${this.#q(attempt)} + 1`);
    if (key !== undefined) sets.push(`${this.#q(key)} = NULL`);
    if (sets.length === 0) return null;
    const takeSql = this.#memo(
      "takeSql",
      () => `UPDATE ${this.target} SET ${sets.join(", ")} WHERE ${this.#id} = ? AND ${this.#claimable}`,
    );
    return { sql: takeSql, values: [id, ...this.#claimableValues(now)] };
  }

  /** Advisory read after the take (or, without an attempt column, the take itself: the row while claimable). */
  advisoryRead(id: unknown, now: Date): Bound {
    if (this.#table.columns.attempt !== undefined || this.#table.columns.key !== undefined) {
      const advisoryReadSql = this.#memo(
        "advisoryReadSql",
        () => `SELECT ${this.selectList} FROM ${this.target} WHERE ${this.#id} = ?`,
      );
      return { sql: advisoryReadSql, values: [id] };
    }
    const advisoryReadSql = this.#memo(
      "advisoryReadSql",
      () => `SELECT ${this.selectList} FROM ${this.target} WHERE ${this.#id} = ? AND ${this.#claimable}`,
    );
    return { sql: advisoryReadSql, values: [id, ...this.#claimableValues(now)] };
  }

  /** Statements that settle rows of this table in one form's style. */
  settlements(style: SettlementStyle): SettlementStatements {
    return new SettlementStatements(this.#table, this.target, this.#id, this.#q, style);
  }

  /** Builds a statement's text on first use and keeps it. */
  #memo(key: string, build: () => string): string {
    let sql = this.#texts.get(key);
    if (sql === undefined) {
      sql = build();
      this.#texts.set(key, sql);
    }
    return sql;
  }
  readonly #texts = new Map<string, string>();
  #lockName: Bound | undefined;
}

/** The settlement statements of one table in one form's style, built on first use and kept. */
export class SettlementStatements {
  readonly #table: TableDefinition;
  readonly #target: string;
  readonly #id: string;
  readonly #q: (column: string) => string;
  readonly #style: SettlementStyle;
  readonly #where: string;
  readonly #cache = new Map<string, string | null>();

  constructor(
    table: TableDefinition,
    target: string,
    id: string,
    q: (column: string) => string,
    style: SettlementStyle,
  ) {
    this.#table = table;
    this.#target = target;
    this.#id = id;
    this.#q = q;
    this.#style = style;
    const processedAt = table.columns.processedAt;
    this.#where = `${id} = ?${style.tokenGuard ? ` AND ${q(required(table.columns.lockedUntil))} = ?` : ""}${
      style.unfinishedGuard === true && processedAt !== undefined ? ` AND ${q(processedAt)} IS NULL` : ""
    }`;
  }

  #whereValues(id: unknown, token: Date | undefined): unknown[] {
    return this.#style.tokenGuard ? [id, token] : [id];
  }

  /** `DELETE` of the row. */
  delete(id: unknown, token?: Date): Bound {
    const sql = this.#cached("delete", () => `DELETE FROM ${this.#target} WHERE ${this.#where}`) ?? "";
    return { sql, values: this.#whereValues(id, token) };
  }

  /**
   * An `UPDATE` of the row setting `first` (a column = ? pair, or nothing) plus what every kept
   * row gets in this form (lockedUntil NULL, attempt + 1 in the row lock form). `null` when
   * there is nothing to set (row lock plain retry on a table without attempt and lockedUntil).
   */
  update(
    kind: "markProcessed" | "releaseAt" | "release" | "moveToGroup",
    value: unknown,
    id: unknown,
    token?: Date,
  ): Bound | null {
    const sql = this.#cached(kind, () => {
      const sets = this.#sets(kind);
      return sets === null ? null : `UPDATE ${this.#target} SET ${sets} WHERE ${this.#where}`;
    });
    if (sql === null) return null;
    return { sql, values: [...(kind === "release" ? [] : [value]), ...this.#whereValues(id, token)] };
  }

  /**
   * The SET list of an update of `kind`: its own column (one `?`, but for a plain release) plus
   * what every kept row gets in this form; `null` when there is nothing to set.
   */
  #sets(kind: "markProcessed" | "releaseAt" | "release" | "moveToGroup"): string | null {
    const c = this.#table.columns;
    const first =
      kind === "markProcessed"
        ? `${this.#q(required(c.processedAt))} = ?`
        : kind === "releaseAt"
          ? `${this.#q(required(c.runAt))} = ?`
          : kind === "moveToGroup"
            ? `${this.#q(required(c.group))} = ?`
            : undefined;
    const sets = [
      first,
      c.lockedUntil === undefined ? undefined : `${this.#q(c.lockedUntil)} = NULL`,
      this.#style.countAttempt && c.attempt !== undefined
        ? `${this.#q(c.attempt)} = ${this.#q(c.attempt)} + 1`
        : undefined,
    ].filter((set): set is string => set !== undefined);
    return sets.length === 0 ? null : sets.join(", ");
  }

  /**
   * Advisory lock form, delete and unlock in one statement: the `DELETE` of {@link
   * SettlementStatements.delete} with `AND RELEASE_LOCK(?) = 1` last in its condition. The server
   * finds the row by primary key and write-locks it (waiting for any other lock on it), then
   * evaluates the condition once, the other conditions first: the lock is released only when the
   * row matched, while the statement holds the row's write lock until it commits (autocommit: at
   * the statement's end). Why that is safe: see `advisory.ts`. Only a `DELETE`: an `UPDATE` at
   * READ COMMITTED may evaluate its condition twice on a row another transaction has locked
   * (InnoDB's semi-consistent read), which would release the lock and then match nothing. Matches
   * no row when the row is gone or finished (the lock is then still held) or when the release did
   * not answer 1.
   */
  deleteAndUnlock(id: unknown, lockName: string): Bound {
    const sql =
      this.#cached(
        "deleteAndUnlock",
        () => `DELETE FROM ${this.#target} WHERE ${this.#where} AND RELEASE_LOCK(?) = 1`,
      ) ?? "";
    return { sql, values: [...this.#whereValues(id, undefined), lockName] };
  }

  /**
   * Coalesced acknowledgement (`settleMany`): the statements applying `settlement` to several
   * rows, exactly as {@link SettlementStatements.delete} / {@link SettlementStatements.update}
   * apply it to one, finding every row by primary key whatever the table's size (see
   * `byPrimaryKey`). A mark as processed, and a delete on MySQL, is one statement with the
   * ids as one list parameter (`id IN (?)`: mysql2 renders each value escaped, whatever the id
   * column's type) and `FORCE INDEX (PRIMARY)` (MySQL's `DELETE` takes it in its multi-table
   * form); in the lease style each row is fenced by its own token: `id IN (…) AND (id,
   * lockedUntil) IN ((?, ?), …)` (the first list finds the rows, the second is the fence). A
   * delete on MariaDB is one {@link SettlementStatements.delete} per row, to run as one
   * compound statement (`compoundSql`).
   */
  ackSteps(
    settlement: AckSettlement,
    held: readonly { readonly id: unknown; readonly token?: Date | undefined }[],
    family: ServerFamily,
  ): BoundSteps {
    if (settlement.kind === "delete" && family === "mariadb") {
      const rows = held.map((row) => this.delete(row.id, row.token));
      return { statements: rows.map((row) => row.sql), values: rows.flatMap((row) => row.values) };
    }
    const values: unknown[] = [];
    let sql: string;
    if (settlement.kind === "delete") {
      sql =
        this.#cached(
          "deleteMany",
          () => `DELETE ${this.#target} FROM ${this.#target}${byPrimaryKey} WHERE ${this.#manyWhere()}`,
        ) ?? "";
    } else {
      sql =
        this.#cached(
          "markProcessedMany",
          () =>
            `UPDATE ${this.#target}${byPrimaryKey} SET ${this.#sets("markProcessed") ?? ""} WHERE ${this.#manyWhere()}`,
        ) ?? "";
      values.push(settlement.at);
    }
    values.push(held.map((row) => row.id));
    if (this.#style.tokenGuard) values.push(held.map((row) => [row.id, row.token]));
    return { statements: [sql], values };
  }

  /** {@link SettlementStatements.ackSteps} as one statement (MariaDB: a compound statement where there are several). */
  ackMany(
    settlement: AckSettlement,
    held: readonly { readonly id: unknown; readonly token?: Date | undefined }[],
    family: ServerFamily,
  ): Bound {
    const { statements, values } = this.ackSteps(settlement, held, family);
    return { sql: statements.length === 1 ? (statements[0] ?? "") : compoundSql(statements), values };
  }

  /**
   * MariaDB, lease style, coalesced delete that says which rows it deleted: one compound
   * statement and one transaction ({@link atomicCompoundSql}) of one `DELETE … WHERE id = ? AND
   * lockedUntil = ? RETURNING id` per row, in the order of `held`: it answers one result set per
   * row, holding the row's id where it deleted it and empty where the row holds another token
   * (or is gone).
   */
  deleteManyReturning(held: readonly { readonly id: unknown; readonly token?: Date | undefined }[]): Bound {
    const rows = held.map((row) => this.delete(row.id, row.token));
    return {
      sql: atomicCompoundSql(rows.map((row) => `${row.sql} RETURNING ${this.#id}`)),
      values: rows.flatMap((row) => row.values),
    };
  }

  /**
   * Lease form, coalesced: reads which of the rows still hold their own token, locking them
   * (`FOR UPDATE`, found by primary key) so that the settlement that follows in the same
   * transaction applies to exactly these. Columns: id.
   */
  lockHeld(held: readonly { readonly id: unknown; readonly token?: Date | undefined }[]): Bound {
    const sql =
      this.#cached(
        "lockHeld",
        () => `SELECT ${this.#id} FROM ${this.#target}${byPrimaryKey} WHERE ${this.#manyWhere()} FOR UPDATE`,
      ) ?? "";
    const values: unknown[] = [held.map((row) => row.id)];
    if (this.#style.tokenGuard) values.push(held.map((row) => [row.id, row.token]));
    return { sql, values };
  }

  /** The condition of a coalesced settlement: the ids, each with its own token in the lease style. */
  #manyWhere(): string {
    const lockedUntil = this.#table.columns.lockedUntil;
    const processedAt = this.#table.columns.processedAt;
    return `${this.#id} IN (?)${
      this.#style.tokenGuard ? ` AND (${this.#id}, ${this.#q(required(lockedUntil))}) IN (?)` : ""
    }${this.#style.unfinishedGuard === true && processedAt !== undefined ? ` AND ${this.#q(processedAt)} IS NULL` : ""}`;
  }

  /**
   * Moves the row to `deadTable` (same database, same described columns): an `INSERT … SELECT`
   * copying every described column but the id (the target assigns its own) and lockedUntil
   * (left NULL: unlocked), with attempt + 1 in the row lock form; then the `DELETE`. Run both in
   * one transaction.
   */
  moveToTable(deadTable: string, id: unknown, token?: Date): { insert: Bound; delete: Bound } {
    const sql =
      this.#cached(`moveToTable:${deadTable}`, () => {
        const c = this.#table.columns;
        const target = quoteTable(deadTable, this.#table.schema, this.#table.name);
        const columns = this.#table.allColumns.filter(
          (column) => column !== c.id && column !== c.lockedUntil,
        );
        const copied = columns.map((column) =>
          column === c.attempt && this.#style.countAttempt ? `${this.#q(column)} + 1` : this.#q(column),
        );
        return `INSERT INTO ${target} (${columns.map(this.#q).join(", ")}) SELECT ${copied.join(", ")} FROM ${this.#target} WHERE ${this.#where}`;
      }) ?? "";
    return { insert: { sql, values: this.#whereValues(id, token) }, delete: this.delete(id, token) };
  }

  #cached(key: string, build: () => string | null): string | null {
    if (!this.#cache.has(key)) this.#cache.set(key, build());
    return this.#cache.get(key) ?? null;
  }
}

/**
 * A row's full lock key in SQL, before any hashing: the lower-cased database name (the table's
 * schema, or the connection's database), `.`, then the key rendered from the template (literals
 * as parameters, columns cast to text, NULL as empty text).
 */
function lockKeyExpression(table: TableDefinition, q: (column: string) => string): Bound {
  const parts = table.advisoryKey?.parts ?? [];
  const keyValues: unknown[] = [];
  const keySql = parts.map((part) => {
    if ("literal" in part) {
      keyValues.push(part.literal);
      return "?";
    }
    return `COALESCE(CAST(${q(part.column)} AS CHAR), '')`;
  });
  return {
    sql: `CONCAT(LOWER(CONVERT(COALESCE(?, DATABASE()) USING utf8mb4)), '.', ${keySql.length === 0 ? "''" : keySql.join(", ")})`,
    values: [table.schema ?? null, ...keyValues],
  };
}

/**
 * The `GET_LOCK` name of a lock key (a full key, or a slot's or row's key made from it): the key
 * itself, or its SHA-256 in hex where it passes 64 characters, as {@link lockNameExpression}
 * names keys in SQL.
 */
export function lockNameOf(text: string): string {
  return [...text].length > 64 ? createHash("sha256").update(text, "utf8").digest("hex") : text;
}

/**
 * Slot locks for a table whose limit n is above 1, one statement, values: the row's lock name,
 * then the n slots' names. Tries the row's lock without waiting and, only when it got it, each
 * slot in order without waiting (`CASE` stops at the first that holds). Answers `slot`: 1 to n
 * (both held), 0 (the row's lock is held elsewhere: nothing held), -1 (no slot free: the row's
 * lock is held and must be released).
 */
export function slotLockSql(limit: number): string {
  const slots = Array.from({ length: limit }, (_, index) => `WHEN GET_LOCK(?, 0) = 1 THEN ${index + 1}`);
  return `SELECT CASE WHEN GET_LOCK(?, 0) = 1 THEN CASE ${slots.join(" ")} ELSE -1 END ELSE 0 END AS \`slot\``;
}

/** Releases a slot's lock and the row's own lock: values slot name, row name; 2 when both were held. */
export const releaseSlotSql =
  "SELECT COALESCE(RELEASE_LOCK(?), 0) + COALESCE(RELEASE_LOCK(?), 0) AS `released`";

/**
 * The advisory lock name of a row, in SQL: the lower-cased database name (the table's schema, or
 * the connection's database), `.`, then the key rendered from the template (literals as
 * parameters, columns cast to text, NULL as empty text); where that passes 64 characters (the
 * longest name `GET_LOCK` takes on MySQL), its SHA-256 in hex. This is the one place the name is
 * computed.
 */
export function lockNameExpression(
  table: TableDefinition,
  q: (column: string) => string = (column) => quoteIdentifier(column, table.name),
): Bound {
  const full = lockKeyExpression(table, q);
  return {
    sql: `IF(CHAR_LENGTH(${full.sql}) > 64, SHA2(${full.sql}, 256), ${full.sql})`,
    values: [...full.values, ...full.values, ...full.values],
  };
}

/**
 * The multi-row `INSERT` of a publish. MariaDB (10.5+) returns the ids with `RETURNING`; MySQL
 * has no `RETURNING`, so the ids are `insertId` onwards (consecutive for one statement, stepped
 * by `auto_increment_increment`). A priority of `null`, or an extra column a row does not fill,
 * takes the column's `DEFAULT`.
 */
export function insertStatement(
  table: TableDefinition,
  family: ServerFamily,
  rows: readonly PublishRow[],
): Bound {
  const q = (column: string): string => quoteIdentifier(column, table.name);
  const c = table.columns;
  const columns: string[] = [c.payload];
  if (c.group !== undefined) columns.push(c.group);
  if (c.runAt !== undefined) columns.push(c.runAt);
  if (c.priority !== undefined) columns.push(c.priority);
  if (c.headers !== undefined) columns.push(c.headers);
  columns.push(...table.extraColumns);
  const values: unknown[] = [];
  const tuples = rows.map((row) => {
    const slots: string[] = [];
    const put = (value: unknown): void => {
      values.push(value);
      slots.push("?");
    };
    put(
      typeof row.payload === "string"
        ? row.payload
        : Buffer.from(row.payload.buffer, row.payload.byteOffset, row.payload.byteLength),
    );
    if (c.group !== undefined) put(row.group);
    if (c.runAt !== undefined) put(row.runAt);
    if (c.priority !== undefined) {
      if (row.priority === null) slots.push("DEFAULT");
      else put(row.priority);
    }
    if (c.headers !== undefined) put(row.headers);
    for (const column of table.extraColumns) {
      if (Object.hasOwn(row.values, column)) put(row.values[column]);
      else slots.push("DEFAULT");
    }
    return `(${slots.join(", ")})`;
  });
  const returning = family === "mariadb" ? ` RETURNING ${q(c.id)}` : "";
  return {
    sql: `INSERT INTO ${quoteDefinedTable(table)} (${columns.map(q).join(", ")}) VALUES ${tuples.join(", ")}${returning}`,
    values,
  };
}

/**
 * The recommended `CREATE TABLE` for `table`: BIGINT AUTO_INCREMENT id, the payload as JSON,
 * LONGTEXT or LONGBLOB, attempt INT NOT NULL DEFAULT 1, times as DATETIME(6) (no time zone:
 * the driver writes UTC), priority INT NOT NULL DEFAULT 0, the group as VARCHAR(191) with a
 * binary collation (groups compare exactly), the key the same with its unique index, extra
 * columns as VARCHAR(191), InnoDB, utf8mb4, and the claim-order index.
 */
export function createTableSql(table: TableDefinition): string {
  const q = (column: string): string => quoteIdentifier(column, table.name);
  const c = table.columns;
  const payload = { json: "JSON", text: "LONGTEXT", bytes: "LONGBLOB" }[table.payloadType];
  const lines: string[] = [
    `  ${q(c.id)} BIGINT NOT NULL AUTO_INCREMENT`,
    `  ${q(c.payload)} ${payload} NOT NULL`,
  ];
  if (c.attempt !== undefined) lines.push(`  ${q(c.attempt)} INT NOT NULL DEFAULT 1`);
  if (c.runAt !== undefined) lines.push(`  ${q(c.runAt)} DATETIME(6) NULL`);
  if (c.priority !== undefined) lines.push(`  ${q(c.priority)} INT NOT NULL DEFAULT 0`);
  if (c.group !== undefined)
    lines.push(`  ${q(c.group)} VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL`);
  if (c.processedAt !== undefined) lines.push(`  ${q(c.processedAt)} DATETIME(6) NULL`);
  if (c.lockedUntil !== undefined) lines.push(`  ${q(c.lockedUntil)} DATETIME(6) NULL`);
  if (c.headers !== undefined) lines.push(`  ${q(c.headers)} JSON NULL`);
  if (c.key !== undefined)
    lines.push(`  ${q(c.key)} VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL`);
  for (const column of table.extraColumns) lines.push(`  ${q(column)} VARCHAR(191) NULL`);
  lines.push(`  PRIMARY KEY (${q(c.id)})`);
  if (c.key !== undefined) lines.push(`  ${uniqueKeyClause(table)}`);
  const order = claimOrderColumns(table);
  if (order.length > 1) lines.push(`  KEY ${q(indexName(table.name))} (${order.map(q).join(", ")})`);
  return `CREATE TABLE IF NOT EXISTS ${quoteDefinedTable(table)} (\n${lines.join(",\n")}\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;\n`;
}

function indexName(table: string): string {
  const name = `${table}_claim_order`;
  return [...name].length <= 64 ? name : "rowclaim_claim_order";
}

function and(conditions: readonly (string | undefined)[]): string {
  const present = conditions.filter((condition): condition is string => condition !== undefined);
  return present.length === 0 ? "TRUE" : present.join(" AND ");
}

function required(column: string | undefined): string {
  if (column === undefined)
    throw new DeclarationError("Internal: a statement needs a column the table does not describe.");
  return column;
}

/** The name of a table's key index: `<table>_key` (or `rowclaim_key` past 64 characters). */
export function uniqueIndexName(table: TableDefinition): string {
  const name = `${table.name}_key`;
  return [...name].length <= 64 ? name : "rowclaim_key";
}

/** The `UNIQUE KEY` clause of `CREATE TABLE` on the key column. */
export function uniqueKeyClause(table: TableDefinition): string {
  const q = (column: string): string => quoteIdentifier(column, table.name);
  return `UNIQUE KEY ${q(uniqueIndexName(table))} (${q(table.columns.key as string)})`;
}
