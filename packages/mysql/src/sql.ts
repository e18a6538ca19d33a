/**
 * Every SQL statement of the MySQL/MariaDB driver, and the backtick quoting of identifiers; where
 * MySQL and MariaDB differ, the variant is picked by {@link ServerFamily}. Published as
 * `@rowclaim/mysql/sql` (it imports nothing of `mysql2`), for tools and drivers on another client.
 * Its exports follow the driver's version, but are not yet a stable contract: pin the version.
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

/** Quotes an identifier in backticks, doubling any inside; a name MySQL cannot hold throws `DeclarationError`. */
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
 * MariaDB: `statements` as one compound statement (`BEGIN NOT ATOMIC …; END`), in order, in one
 * round trip; a `SELECT` inside answers the first result set; an error stops the block there.
 */
export function compoundSql(statements: readonly string[]): string {
  return `BEGIN NOT ATOMIC ${statements.map((statement) => `${statement};`).join(" ")} END`;
}

/** MariaDB: `statements` as one compound statement and one transaction: all commit, or none (the error `RESIGNAL`ed). */
export function atomicCompoundSql(statements: readonly string[]): string {
  return compoundSql([
    "DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END",
    transactionSql.begin,
    ...statements,
    transactionSql.commit,
  ]);
}

/**
 * The hint of every statement finding rows by a list of ids: without it a small table is scanned,
 * and a locking scan waits on rows others hold. MariaDB's `DELETE` ignores it (see `ackSteps`).
 */
const byPrimaryKey = " FORCE INDEX (PRIMARY)";

/** Statements to run in order in one round trip, and the values of all their placeholders, in order. */
export interface BoundSteps {
  readonly statements: readonly string[];
  readonly values: unknown[];
}

/** The session variable a compound statement sets right after its commit: read back after an error, it says whether it committed. */
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

/** The columns an index must begin with to serve claims in claim order (group, priority, runAt, id), as `schemaSql` creates it. */
export function claimOrderColumns(table: TableDefinition): string[] {
  const c = table.columns;
  return [c.group, c.priority, c.runAt, c.id].filter((column): column is string => column !== undefined);
}

/**
 * Advisory lock functions. Values: the lock name. A fixed column alias keeps mysql2 from compiling
 * a row parser per key (it would name the column after the statement text, key included).
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
  /** Advisory lock form: every settlement applies only to a row still unfinished (`processedAt IS NULL`). */
  readonly unfinishedGuard?: boolean;
}

/** The statements of one subscription (table + group), built once; methods only put values beside the text. */
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
  readonly #claimIndexHint: string;

  /**
   * @param claimIndex an index beginning with the claim order ({@link claimOrderColumns}), named
   * by locking claims (`FORCE INDEX`) so that InnoDB locks only the rows up to the limit.
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

  /**
   * The FIFO group's guard: `GET_LOCK` of `<database>.rowclaim-fifo:<table>:<group as JSON>`
   * (hashed past 64 characters), waiting up to `waitSeconds`. 1: this session holds the group.
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
    return hashedPast64({
      sql: "CONCAT(LOWER(CONVERT(COALESCE(?, DATABASE()) USING utf8mb4)), '.', ?)",
      values: [this.#table.schema ?? null, this.#fifoKey],
    });
  }

  /** Row lock FIFO head, under the group's guard: locks the group's first unfinished row, without waiting. Columns: id, due. */
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

  /** Lease claim, first step: the row lock claim's locking read, rows read whole so that none is read back. */
  leaseSelect(now: Date, limit: number): Bound {
    return this.rowLockClaim(now, limit);
  }

  /** Lease claim of one row without a transaction, first step: up to `limit` claimable rows, read whole, unlocked. */
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
   * Lease claim of one row without a transaction, second step: the lease's update on row `id` while
   * it is still claimable and its attempt still the candidate's. 1 matched row: this claim took it.
   */
  leaseTakeOne(id: unknown, expiry: Date, now: Date, attempt: unknown): Bound {
    const c = this.#table.columns;
    const sql = this.#memo(
      "leaseTakeOneSql",
      () =>
        `UPDATE ${this.target} SET ${this.#leaseSets()} WHERE ${this.#id} = ? AND ${this.#claimable}${c.attempt === undefined ? "" : ` AND ${this.#q(c.attempt)} = ?`}`,
    );
    return {
      sql,
      values: [expiry, id, ...this.#claimableValues(now), ...(c.attempt === undefined ? [] : [attempt])],
    };
  }

  /** Lease claim, second step: writes the expiry and counts the attempt on the locked rows. */
  leaseTake(ids: readonly unknown[], expiry: Date): Bound {
    const leaseTakeSql = this.#memo(
      "leaseTakeSql",
      () => `UPDATE ${this.target}${byPrimaryKey} SET ${this.#leaseSets()} WHERE ${this.#id} IN (?)`,
    );
    return { sql: leaseTakeSql, values: [expiry, ids] };
  }

  /** What a lease claim sets: the expiry (`?`), `attempt + 1`, and NULL into the key (unique jobs). */
  #leaseSets(): string {
    const c = this.#table.columns;
    return `${this.#q(required(c.lockedUntil))} = ?${
      c.attempt === undefined ? "" : `, ${this.#q(c.attempt)} = ${this.#q(c.attempt)} + 1`
    }${c.key === undefined ? "" : `, ${this.#q(c.key)} = NULL`}`;
  }

  /** Lease FIFO head, under the group's guard: the group's first unfinished row, locked. Columns: id, due, in work (a live lease in the group). */
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

  /** Lease extension, one statement: moves each row still holding its own token to `expiry`. `held` must not name an id twice. */
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

  /** Which of the rows hold `expiry` now (after an extension that matched fewer than all). Columns: id. */
  leaseHolding(ids: readonly unknown[], expiry: Date): Bound {
    const lockedUntil = this.#q(required(this.#table.columns.lockedUntil));
    const holdingSql = this.#memo(
      "holdingSql",
      () =>
        `SELECT ${this.#id} FROM ${this.target}${byPrimaryKey} WHERE ${this.#id} IN (?) AND ${lockedUntil} = ?`,
    );
    return { sql: holdingSql, values: [ids, expiry] };
  }

  /** Advisory candidates: claimable rows in claim order with their lock names, leaving out held names. Columns: id, lock name. */
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
   * Advisory candidates for a limit n above 1: claimable rows with their full (unhashed) key,
   * leaving out keys whose n slots are all held. Columns: id, full key.
   */
  #slotCandidates(now: Date, limit: number): Bound {
    const full = lockKeyExpression(this.#table, this.#q);
    const slots = Array.from({ length: this.#table.advisoryLimit }, (_, index) =>
      hashedPast64({
        sql: `CONCAT(${full.sql}, '${ADVISORY_SLOT_SEPARATOR}${index + 1}')`,
        values: full.values,
      }),
    );
    const candidatesSql = this.#memo(
      "slotCandidatesSql",
      () =>
        `SELECT ${this.#id}, ${full.sql} AS \`lock_key\` FROM ${this.target} WHERE ${this.#claimable} AND (${slots.map((slot) => `IS_USED_LOCK(${slot.sql}) IS NULL`).join(" OR ")}) ${this.#orderBy} LIMIT ?`,
    );
    return {
      sql: candidatesSql,
      values: [...full.values, ...this.#claimableValues(now), ...slots.flatMap((slot) => slot.values), limit],
    };
  }

  /** Advisory take: `attempt + 1` and NULL into the key while the row is claimable; `null` for a table with neither column. */
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

  /** Advisory read after the take (or, without a take, the take itself: the row while claimable). */
  advisoryRead(id: unknown, now: Date): Bound {
    const { attempt, key } = this.#table.columns;
    const taken = attempt !== undefined || key !== undefined;
    const advisoryReadSql = this.#memo(
      "advisoryReadSql",
      () =>
        `SELECT ${this.selectList} FROM ${this.target} WHERE ${this.#id} = ?${taken ? "" : ` AND ${this.#claimable}`}`,
    );
    return { sql: advisoryReadSql, values: taken ? [id] : [id, ...this.#claimableValues(now)] };
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

  /** An `UPDATE` of the row of `kind` (see `#sets`); `null` when there is nothing to set. */
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

  /** The SET list of `kind`: its own column (one `?`, none for a plain release) plus what every kept row gets in this form. */
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
   * Advisory lock form, the `DELETE` of {@link SettlementStatements.delete} with `AND RELEASE_LOCK(?)
   * = 1` last: the lock goes only when the row matched (why it is safe: `advisory.ts`). Only a
   * `DELETE`: InnoDB's semi-consistent read may evaluate an `UPDATE`'s condition twice.
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
   * Coalesced acknowledgement: `settlement` applied to several rows as to one, found by primary key.
   * One statement (`id IN (?)`, in the lease style fenced by `(id, lockedUntil) IN (?)`), but a
   * delete on MariaDB: one {@link SettlementStatements.delete} per row, for a compound statement.
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
   * MariaDB, lease style: a coalesced delete in one transaction ({@link atomicCompoundSql}), one
   * `DELETE … RETURNING id` per row of `held`, each answering its own result set (empty: not deleted).
   */
  deleteManyReturning(held: readonly { readonly id: unknown; readonly token?: Date | undefined }[]): Bound {
    const rows = held.map((row) => this.delete(row.id, row.token));
    return {
      sql: atomicCompoundSql(rows.map((row) => `${row.sql} RETURNING ${this.#id}`)),
      values: rows.flatMap((row) => row.values),
    };
  }

  /** Lease form, coalesced: the rows still holding their own token, locked `FOR UPDATE`. Columns: id. */
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

  /** Moves the row to `deadTable`: an `INSERT … SELECT` of every described column but id and lockedUntil, then the `DELETE`. */
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

/** A row's full lock key in SQL, before any hashing (see {@link lockNameExpression}). */
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

/** The `GET_LOCK` name of a lock key: the key, or its SHA-256 in hex past 64 characters, as {@link lockNameExpression} in SQL. */
export function lockNameOf(text: string): string {
  return [...text].length > 64 ? createHash("sha256").update(text, "utf8").digest("hex") : text;
}

/**
 * Slot locks for a limit n above 1 (values: the row's lock name, then the n slots'): the row's lock,
 * then the first free slot, never waiting. `slot`: 1 to n (both held), 0 (none), -1 (only the row's).
 */
export function slotLockSql(limit: number): string {
  const slots = Array.from({ length: limit }, (_, index) => `WHEN GET_LOCK(?, 0) = 1 THEN ${index + 1}`);
  return `SELECT CASE WHEN GET_LOCK(?, 0) = 1 THEN CASE ${slots.join(" ")} ELSE -1 END ELSE 0 END AS \`slot\``;
}

/** Releases a slot's lock and the row's own lock: values slot name, row name; 2 when both were held. */
export const releaseSlotSql =
  "SELECT COALESCE(RELEASE_LOCK(?), 0) + COALESCE(RELEASE_LOCK(?), 0) AS `released`";

/**
 * The advisory lock name of a row, in SQL, the one place it is computed: the lower-cased database
 * name, `.`, the key rendered from the template (literals as parameters, columns cast to text, NULL
 * as empty text); past 64 characters (`GET_LOCK`'s limit on MySQL), its SHA-256 in hex.
 */
export function lockNameExpression(
  table: TableDefinition,
  q: (column: string) => string = (column) => quoteIdentifier(column, table.name),
): Bound {
  return hashedPast64(lockKeyExpression(table, q));
}

/** `text` as a `GET_LOCK` name in SQL: itself, or its SHA-256 in hex past 64 characters. */
function hashedPast64(text: Bound): Bound {
  return {
    sql: `IF(CHAR_LENGTH(${text.sql}) > 64, SHA2(${text.sql}, 256), ${text.sql})`,
    values: [...text.values, ...text.values, ...text.values],
  };
}

/**
 * The multi-row `INSERT` of a publish, with `RETURNING` the ids on MariaDB (MySQL's are `insertId`
 * onwards). A `null` priority, or an extra column a row does not fill, takes the column's `DEFAULT`.
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

/** The recommended `CREATE TABLE` for `table`: times as DATETIME(6) in UTC, groups and keys compared exactly (binary collation). */
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
