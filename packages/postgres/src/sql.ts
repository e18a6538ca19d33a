/**
 * `@rowclaim/postgres/sql`: every SQL text the PostgreSQL driver sends, built once per
 * subscription from the table's definition (identifiers through {@link quoteIdent}, values as
 * named parameters, {@link statementValues} puts them in `$n` order). It imports nothing of `pg`;
 * its exports follow the driver's version but are not yet a stable contract: pin the version.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { IsolationLevel, TableDefinition } from "@rowclaim/core";
import { ADVISORY_SLOT_SEPARATOR } from "@rowclaim/core/driver";

/** Quotes an identifier for PostgreSQL: wraps it in double quotes, doubling any inside. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The table reference `"schema"."name"` (or `"name"` when the table names no schema). */
export function tableRef(table: TableDefinition, name: string = table.name): string {
  return table.schema === undefined ? quoteIdent(name) : `${quoteIdent(table.schema)}.${quoteIdent(name)}`;
}

/** The column types the catalog reports for a table, by column name (`format_type` text). */
export type ColumnTypes = ReadonlyMap<string, string>;

/** The alias under which a json payload is also selected as text, for `decodePayload`. */
export const PAYLOAD_TEXT_ALIAS = "rowclaim$payload_text";

/** One statement: its text, its parameter names in `$n` order, a name hashed from the text, its purpose. */
export interface Statement {
  readonly purpose: string;
  readonly name: string;
  readonly text: string;
  readonly params: readonly string[];
}

/** Parameter values of a statement, by parameter name. */
export type StatementValues = Readonly<Record<string, unknown>>;

/** Named parameter slots: each name gets one `$n` placeholder. */
export class ParamSlots {
  readonly names: string[] = [];
  /** The `$n` placeholder of the named parameter (the same name yields the same placeholder). */
  ref(name: string): string {
    let index = this.names.indexOf(name);
    if (index === -1) index = this.names.push(name) - 1;
    return `$${index + 1}`;
  }
}

/** Builds a named statement from text whose parameters are named through `params.ref`. */
export function statement(purpose: string, build: (params: ParamSlots) => string): Statement {
  const params = new ParamSlots();
  const text = build(params);
  const name = `rowclaim_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
  return Object.freeze({ purpose, name, text, params: Object.freeze([...params.names]) });
}

/**
 * Claims of up to this many rows carry their limit as a literal, one prepared statement per limit,
 * so PostgreSQL keeps a plan for each; larger claims take it as a parameter (DRIVERS.md, "Claim ahead").
 */
export const LITERAL_LIMIT_MAX = 32;

/** A claim's statement, one text per limit (see {@link LITERAL_LIMIT_MAX}). */
export interface ClaimStatement {
  /** The text with its limit as a parameter: what the driver checks at open, and what claims of more than {@link LITERAL_LIMIT_MAX} rows run. */
  readonly general: Statement;
  /** The statement a claim of `limit` rows runs. */
  forLimit(limit: number): Statement;
}

/** A row count derived from the limit: the parameter `name` in the general text, else the literal `rows(limit)`. */
type LimitSlot = (name: string, rows?: (limit: number) => number) => string;

function claimStatement(
  purpose: string,
  build: (params: ParamSlots, limit: LimitSlot) => string,
): ClaimStatement {
  let limited = false;
  const general = statement(purpose, (p) =>
    build(p, (name) => {
      limited = true;
      return p.ref(name);
    }),
  );
  if (!limited) return Object.freeze({ general, forLimit: () => general });
  const byLimit = new Map<number, Statement>();
  return Object.freeze({
    general,
    forLimit(limit: number): Statement {
      if (!Number.isInteger(limit) || limit < 1 || limit > LITERAL_LIMIT_MAX) return general;
      let stmt = byLimit.get(limit);
      if (stmt === undefined) {
        stmt = statement(purpose, (p) =>
          build(p, (_name, rows) => String(rows === undefined ? limit : rows(limit))),
        );
        byLimit.set(limit, stmt);
      }
      return stmt;
    },
  });
}

/** Puts a statement's named values in `$n` order. */
export function statementValues(stmt: Statement, values: StatementValues): unknown[] {
  const { params } = stmt;
  const ordered = new Array<unknown>(params.length);
  for (let index = 0; index < params.length; index += 1) {
    const name = params[index] as string;
    if (!(name in values))
      throw new Error(`rowclaim/postgres: statement "${stmt.purpose}" needs parameter "${name}".`);
    ordered[index] = values[name];
  }
  return ordered;
}

/** `alias."column"`, quoted. */
export function col(alias: string, column: string): string {
  return `${alias}.${quoteIdent(column)}`;
}

/** Every described column but `omit`; a json payload once, as text under {@link PAYLOAD_TEXT_ALIAS} (`pg` does not parse it). */
function selectList(
  table: TableDefinition,
  types: ColumnTypes,
  alias: string,
  omit: readonly string[] = [],
): string {
  const payload = table.columns.payload;
  const payloadAsText = table.payloadType === "json" && ["json", "jsonb"].includes(types.get(payload) ?? "");
  const items: string[] = [];
  for (const column of table.allColumns) {
    if (omit.includes(column)) continue;
    items.push(
      column === payload && payloadAsText
        ? `${col(alias, payload)}::text AS ${quoteIdent(PAYLOAD_TEXT_ALIAS)}`
        : `${col(alias, column)} AS ${quoteIdent(column)}`,
    );
  }
  return items.join(", ");
}

/** Unfinished, and in the group (`= $group`, or `IS NULL`) where the table has a group column. */
function openInGroup(table: TableDefinition, group: string | null, alias: string, p: ParamSlots): string[] {
  const { processedAt, group: column } = table.columns;
  const conditions = processedAt === undefined ? [] : [`${col(alias, processedAt)} IS NULL`];
  if (column !== undefined)
    conditions.push(
      group === null ? `${col(alias, column)} IS NULL` : `${col(alias, column)} = ${p.ref("group")}`,
    );
  return conditions;
}

/** Unfinished, in the group, due and (lease) unlocked; `nowExpression` reads the claim's time (default `$now`). */
function claimable(
  table: TableDefinition,
  group: string | null,
  alias: string,
  params: ParamSlots,
  nowExpression?: string,
): string {
  const conditions = openInGroup(table, group, alias, params);
  const { runAt, lockedUntil } = table.columns;
  // Referenced only where a condition reads it: a parameter the text never uses has no type.
  const now = runAt === undefined && lockedUntil === undefined ? "" : (nowExpression ?? params.ref("now"));
  if (runAt !== undefined)
    conditions.push(`(${col(alias, runAt)} IS NULL OR ${col(alias, runAt)} <= ${now})`);
  if (lockedUntil !== undefined) {
    conditions.push(`(${col(alias, lockedUntil)} IS NULL OR ${col(alias, lockedUntil)} <= ${now})`);
  }
  return conditions.length === 0 ? "TRUE" : conditions.join(" AND ");
}

/**
 * Claim order, led by the group column (every caller filters on one group: no order changes, and
 * the claim-order index is read in order also for `group IS NULL`, which is no equality to the planner).
 */
function claimOrder(table: TableDefinition, alias: string): string {
  const { priority, runAt, id, group } = table.columns;
  const items: string[] = [];
  if (group !== undefined) items.push(`${col(alias, group)} ASC`);
  if (priority !== undefined) items.push(`${col(alias, priority)} ASC`);
  if (runAt !== undefined) items.push(`${col(alias, runAt)} ASC NULLS FIRST`);
  items.push(`${col(alias, id)} ASC`);
  return items.join(", ");
}

/** FIFO: the row is its group's head, the first unfinished row in claim order, due or not. */
function fifoHead(table: TableDefinition, group: string | null, alias: string, params: ParamSlots): string {
  const conditions = openInGroup(table, group, "rc_head", params);
  const where = conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
  return `${col(alias, table.columns.id)} = (SELECT ${col("rc_head", table.columns.id)} FROM ${tableRef(table)} AS rc_head${where} ORDER BY ${claimOrder(table, "rc_head")} LIMIT 1)`;
}

/** `BEGIN`, with the table's isolation level when it names one. */
export function beginSql(isolation: IsolationLevel | undefined): string {
  return isolation === undefined ? "BEGIN" : `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`;
}

/** Ends a transaction. */
export const commitSql = "COMMIT";
/** Undoes a transaction. */
export const rollbackSql = "ROLLBACK";

/** Reads the server version. */
export const serverVersionSql =
  "SELECT current_setting('server_version_num') AS version_num, current_setting('server_version') AS version";

/** Reads a table's columns and their types; `$1` is the table reference as text (`to_regclass`). */
export const tableColumnsSql =
  "SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_catalog.pg_attribute a " +
  "WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum";

/** Prepares a statement only to check it against the schema (`PREPARE`, then {@link deallocateSql}). */
export function prepareCheckSql(name: string, text: string): string {
  return `PREPARE ${quoteIdent(name)} AS ${text}`;
}

/** Drops a statement prepared by {@link prepareCheckSql}. */
export function deallocateSql(name: string): string {
  return `DEALLOCATE ${quoteIdent(name)}`;
}

/** Tries a session advisory lock on the key's 64-bit hash, never waiting. */
export const tryAdvisoryLock = statement(
  "advisory lock",
  (p) => `SELECT pg_try_advisory_lock(hashtextextended(${p.ref("key")}::text, 0)) AS locked`,
);

/** Releases a session advisory lock taken by {@link tryAdvisoryLock}. */
export const advisoryUnlock = statement(
  "advisory unlock",
  (p) => `SELECT pg_advisory_unlock(hashtextextended(${p.ref("key")}::text, 0)) AS unlocked`,
);

/** FIFO guard, row lock form: a transaction lock on the group's key, never waiting. */
export const fifoTryGuard = statement(
  "FIFO group guard",
  (p) => `SELECT pg_try_advisory_xact_lock(hashtextextended(${p.ref("key")}::text, 0)) AS locked`,
);

/** FIFO guard, lease form: a transaction lock on the group's key, waiting for the other claim to commit. */
export const fifoWaitGuard = statement(
  "FIFO group guard",
  (p) => `SELECT pg_advisory_xact_lock(hashtextextended(${p.ref("key")}::text, 0)) AS locked`,
);

/** Row lock claim: locks up to `$limit` due rows, skipping locked ones (FIFO: the due head, waiting for its lock). */
export function rowLockClaimSql(
  table: TableDefinition,
  group: string | null,
  types: ColumnTypes,
): ClaimStatement {
  return claimStatement("row lock claim", (p, limitSlot) => {
    let where = claimable(table, group, "rc_src", p);
    if (table.fifo) where += ` AND ${fifoHead(table, group, "rc_src", p)}`;
    const limit = table.fifo ? "1" : limitSlot("limit");
    const lock = table.fifo ? "FOR UPDATE" : "FOR UPDATE SKIP LOCKED";
    return `SELECT ${selectList(table, types, "rc_src")} FROM ${tableRef(table)} AS rc_src WHERE ${where} ORDER BY ${claimOrder(table, "rc_src")} LIMIT ${limit} ${lock}`;
  });
}

/**
 * Lease claim, one statement: a CTE locks due rows, the UPDATE writes `$expiry` and counts the
 * attempt, returning them without lockedUntil. FIFO: the head only, none while a lease of the group runs.
 */
export function leaseClaimSql(
  table: TableDefinition,
  group: string | null,
  types: ColumnTypes,
): ClaimStatement {
  return claimStatement("lease claim", (p, limitSlot) => {
    const { id, lockedUntil } = table.columns;
    const until = lockedUntil as string;
    let where = claimable(table, group, "rc_src", p);
    if (table.fifo) {
      const busy = [...openInGroup(table, group, "rc_busy", p), `${col("rc_busy", until)} > ${p.ref("now")}`];
      where += ` AND ${fifoHead(table, group, "rc_src", p)}`;
      where += ` AND NOT EXISTS (SELECT 1 FROM ${tableRef(table)} AS rc_busy WHERE ${busy.join(" AND ")})`;
    }
    const limit = table.fifo ? "1" : limitSlot("limit");
    const lock = table.fifo ? "FOR UPDATE" : "FOR UPDATE SKIP LOCKED";
    return (
      `WITH rc_pick AS (SELECT ${col("rc_src", id)} AS rc_id FROM ${tableRef(table)} AS rc_src WHERE ${where} ` +
      `ORDER BY ${claimOrder(table, "rc_src")} LIMIT ${limit} ${lock}) ` +
      `UPDATE ${tableRef(table)} AS rc_row SET ${leaseClaimSets(table, p)} WHERE ${pickedRows(table)} ` +
      `RETURNING ${selectList(table, types, "rc_row", [until])}`
    );
  });
}

/** The rows `rc_pick` locked, as `rc_row`, found through the primary key (DRIVERS.md, "Claim ahead"). */
function pickedRows(table: TableDefinition): string {
  return `${col("rc_row", table.columns.id)} = ANY(ARRAY(SELECT rc_pick.rc_id FROM rc_pick))`;
}

/** What a lease claim writes to each row it takes (as `rc_row`): `$expiry`, the attempt counted, the unique key cleared. */
function leaseClaimSets(table: TableDefinition, p: ParamSlots): string {
  const { lockedUntil, attempt, key } = table.columns;
  const sets = [`${quoteIdent(lockedUntil as string)} = ${p.ref("expiry")}`];
  if (attempt !== undefined) sets.push(`${quoteIdent(attempt)} = ${col("rc_row", attempt)} + 1`);
  if (key !== undefined) sets.push(`${quoteIdent(key)} = NULL`);
  return sets.join(", ");
}

/** How a lease ack statement takes its rows: `"many"`, `$ids[i]`/`$tokens[i]` pairs; `"one"`, scalars `$id`/`$token` (planned once). */
export type LeaseAcks = "many" | "one";

/** A lease ack: each held row still holding its token deleted, or marked processed at `$at` (lock cleared), as `rc_done`. */
function leaseAckChange(
  table: TableDefinition,
  types: ColumnTypes,
  p: ParamSlots,
  processedAt: string | undefined,
  acks: LeaseAcks = "many",
): string {
  const { id, lockedUntil } = table.columns;
  const until = lockedUntil as string;
  const idType = types.get(id) ?? "text";
  const untilType = types.get(until) ?? "timestamp with time zone";
  const [held, matched] =
    acks === "one"
      ? [
          "",
          `${col("rc_done", id)} = ${p.ref("id")}::${idType} AND ${col("rc_done", until)} = ${p.ref("token")}::${untilType}`,
        ]
      : [
          `unnest(${p.ref("ids")}::${idType}[], ${p.ref("tokens")}::${untilType}[]) AS rc_held(rc_id, rc_until)`,
          `${col("rc_done", id)} = rc_held.rc_id AND ${col("rc_done", until)} = rc_held.rc_until`,
        ];
  if (processedAt === undefined)
    return `DELETE FROM ${tableRef(table)} AS rc_done ${held === "" ? "" : `USING ${held} `}WHERE ${matched}`;
  return (
    `UPDATE ${tableRef(table)} AS rc_done SET ${quoteIdent(processedAt)} = ${p.ref("at")}, ${quoteIdent(until)} = NULL ` +
    `${held === "" ? "" : `FROM ${held} `}WHERE ${matched}`
  );
}

/** The column under which a lease claim carrying acks reports the ids its acks settled (an array, or NULL). */
export const LEASE_ACKED_ALIAS = "rowclaim$acked";

/** A lease claim carrying acks, one statement per ack kind (see {@link leaseClaimWithAcksSql}). */
export interface LeaseClaimWithAcksStatements {
  readonly delete: ClaimStatement;
  /** `null` where the table has no processedAt column. */
  readonly markProcessed: ClaimStatement | null;
}

/**
 * Lease acks (as {@link leaseSettleManySql}) and the next claim (as {@link leaseClaimSql}, acked rows
 * excluded) in one statement. The first row carries {@link LEASE_ACKED_ALIAS}: `{}` where every ack
 * settled, else the settled ids; no row claimed gives one all-NULL row. Not for FIFO tables.
 */
export function leaseClaimWithAcksSql(
  table: TableDefinition,
  group: string | null,
  types: ColumnTypes,
  acks: LeaseAcks = "many",
): LeaseClaimWithAcksStatements {
  const { id, lockedUntil, processedAt } = table.columns;
  const until = lockedUntil as string;
  const idType = types.get(id) ?? "text";
  const build = (processed: string | undefined): ClaimStatement =>
    claimStatement(
      `lease ${processed === undefined ? "delete" : "markProcessed"} settlement${acks === "one" ? " of one row" : ""} with the next claim`,
      (p, limitSlot) => {
        const change = leaseAckChange(table, types, p, processed, acks);
        const ids = acks === "one" ? "" : `${p.ref("ids")}::${idType}[]`;
        // A hashed subplan: `<> ALL(…)` compares each candidate with every acked id.
        const notAcked = acks === "one" ? `<> ${p.ref("id")}::${idType}` : `NOT IN (SELECT unnest(${ids}))`;
        const count = acks === "one" ? "1" : `cardinality(${ids})`;
        const where = `${claimable(table, group, "rc_src", p)} AND ${col("rc_src", id)} ${notAcked}`;
        return (
          `WITH rc_acked AS (${change} RETURNING ${col("rc_done", id)} AS rc_id), ` +
          `rc_pick AS (SELECT ${col("rc_src", id)} AS rc_id FROM ${tableRef(table)} AS rc_src WHERE ${where} ` +
          `ORDER BY ${claimOrder(table, "rc_src")} LIMIT ${limitSlot("limit")} FOR UPDATE SKIP LOCKED), ` +
          `rc_claimed AS (UPDATE ${tableRef(table)} AS rc_row SET ${leaseClaimSets(table, p)} WHERE ${pickedRows(table)} ` +
          `RETURNING ${selectList(table, types, "rc_row", [until])}) ` +
          // The acked ids on the first row only (else parsed once per claimed row), `{}` when all settled.
          `SELECT rc_claimed.*, CASE WHEN row_number() OVER () = 1 THEN ` +
          `(CASE WHEN (SELECT count(*) FROM rc_acked) = ${count} THEN '{}'::${idType}[] ` +
          `ELSE (SELECT array_agg(rc_acked.rc_id) FROM rc_acked) END) END AS ${quoteIdent(LEASE_ACKED_ALIAS)} ` +
          `FROM (SELECT 1) AS rc_one LEFT JOIN rc_claimed ON TRUE ORDER BY row_number() OVER ()`
        );
      },
    );
  return {
    delete: build(undefined),
    markProcessed: processedAt === undefined ? null : build(processedAt),
  };
}

/** Lease extension: moves each held lease still holding its token to `$expiry`, returning the ids moved. */
export function leaseExtendSql(table: TableDefinition, types: ColumnTypes): Statement {
  return statement("lease extension", (p) => {
    const { id, lockedUntil } = table.columns;
    const until = lockedUntil as string;
    const idType = types.get(id) ?? "text";
    const untilType = types.get(until) ?? "timestamp with time zone";
    return (
      `UPDATE ${tableRef(table)} AS rc_row SET ${quoteIdent(until)} = ${p.ref("expiry")} ` +
      `FROM unnest(${p.ref("ids")}::${idType}[], ${p.ref("tokens")}::${untilType}[]) AS rc_held(rc_id, rc_until) ` +
      `WHERE ${col("rc_row", id)} = rc_held.rc_id AND ${col("rc_row", until)} = rc_held.rc_until ` +
      `RETURNING ${col("rc_row", id)} AS rc_id`
    );
  });
}

/** How many candidate rows an advisory claim looks at before it picks one per key. */
export const ADVISORY_WINDOW_FACTOR = 20;

/** The due rows an advisory claim of `limit` rows looks at (too few keys costs speed only: a second read follows). */
export function advisoryWindow(limit: number): number {
  return limit * ADVISORY_WINDOW_FACTOR + 8;
}

/** The candidates (one per key) an advisory claim of `limit` rows reads from its window. */
export function advisoryCandidateCount(limit: number): number {
  return limit * 4 + 8;
}

/** The advisory key rendered in SQL: literals as parameters, columns cast to text, NULL as ''. */
export function renderedKey(table: TableDefinition, alias: string, p: ParamSlots): string {
  const parts = table.advisoryKey?.parts ?? [];
  const rendered = parts.map((part, index) =>
    "literal" in part ? `${p.ref(`keyLiteral${index}`)}::text` : `${col(alias, part.column)}::text`,
  );
  return rendered.length === 0 ? "''" : `concat(${rendered.join(", ")})`;
}

/** The 64-bit hashes of the advisory locks any session holds in this database (`classid` high, `objid` low). */
const heldAdvisoryHashes =
  "SELECT ((rc_l.classid::bigint << 32) | rc_l.objid::bigint) FROM pg_catalog.pg_locks AS rc_l " +
  "WHERE rc_l.locktype = 'advisory' AND rc_l.objsubid = 1 AND rc_l.granted " +
  "AND rc_l.database = (SELECT rc_d.oid FROM pg_catalog.pg_database AS rc_d WHERE rc_d.datname = current_database())";

/** Which keys advisory candidates pass over: `"anySession"`, all held (`pg_locks`, costly); `"listed"`, those in `$held`. */
export type AdvisoryExclusion = "anySession" | "listed";

/**
 * Advisory candidates, nothing locked: the first row per key in claim order among the first
 * `$window` due rows whose keys are not held (passed over before the window is cut).
 */
export function advisoryCandidatesSql(
  table: TableDefinition,
  group: string | null,
  types: ColumnTypes,
  exclusion: AdvisoryExclusion = "anySession",
): ClaimStatement {
  return claimStatement(
    exclusion === "anySession" ? "advisory claim" : "advisory claim (own keys passed over)",
    (p, limitSlot) => {
      const { id, priority, runAt } = table.columns;
      const key = renderedKey(table, "rc_src", p);
      // `$now` through a scalar subquery: the kept plan (literal limits) costs as a custom one.
      const runAtType = runAt === undefined ? undefined : types.get(runAt);
      const now = runAtType === undefined ? undefined : `(SELECT ${p.ref("now")}::${runAtType})`;
      const orderCols: string[] = [];
      const outerOrder: string[] = [];
      if (priority !== undefined) {
        orderCols.push(`${col("rc_src", priority)} AS rc_o1`);
        outerOrder.push("rc_o1 ASC");
      }
      if (runAt !== undefined) {
        orderCols.push(`${col("rc_src", runAt)} AS rc_o2`);
        outerOrder.push("rc_o2 ASC NULLS FIRST");
      }
      outerOrder.push("rc_id ASC");
      const limit = table.advisoryLimit;
      const inner =
        `SELECT ${[`${col("rc_src", id)} AS rc_id`, `${key} COLLATE "C" AS rc_key`, ...orderCols].join(", ")} FROM ${tableRef(table)} AS rc_src ` +
        `WHERE ${claimable(table, group, "rc_src", p, now)} AND ${
          exclusion === "listed"
            ? `NOT (${key} = ANY(${p.ref("held")}::text[]))`
            : limit === 1
              ? `hashtextextended(${key}, 0) NOT IN (${heldAdvisoryHashes})`
              : `EXISTS (SELECT 1 FROM generate_series(1, ${limit}) AS rc_s(n) WHERE hashtextextended(${key} || '${ADVISORY_SLOT_SEPARATOR}' || rc_s.n, 0) NOT IN (${heldAdvisoryHashes}))`
        } ` +
        `ORDER BY ${claimOrder(table, "rc_src")} LIMIT ${limitSlot("window", advisoryWindow)}`;
      // One row per key (n per key above a limit of 1), keys sorted bytewise ("C"), not by locale.
      const distinct =
        limit === 1
          ? `SELECT DISTINCT ON (rc_key) * FROM (${inner}) AS rc_w ORDER BY rc_key, ${outerOrder.join(", ")}`
          : `SELECT * FROM (SELECT rc_w.*, row_number() OVER (PARTITION BY rc_key ORDER BY ${outerOrder.join(", ")}) AS rc_rank FROM (${inner}) AS rc_w) AS rc_r WHERE rc_rank <= ${limit}`;
      return `SELECT rc_id, rc_key FROM (${distinct}) AS rc_c ORDER BY ${outerOrder.join(", ")} LIMIT ${limitSlot("limit", advisoryCandidateCount)}`;
    },
  );
}

/** The literal parts of the advisory key, as the candidates statement's parameters. */
export function advisoryKeyValues(table: TableDefinition): Record<string, string> {
  const values: Record<string, string> = {};
  (table.advisoryKey?.parts ?? []).forEach((part, index) => {
    if ("literal" in part) values[`keyLiteral${index}`] = part.literal;
  });
  return values;
}

/** The column under which {@link advisoryTakeSql} reports whether it got the key's lock. */
export const ADVISORY_LOCKED_ALIAS = "rowclaim$locked";

/**
 * Advisory lock and take, one statement: tries the key's lock without waiting, and only with it
 * takes the row while still claimable under that key (its newest committed version). One row
 * always: {@link ADVISORY_LOCKED_ALIAS} and the columns (NULL when not taken: the caller unlocks).
 */
export function advisoryTakeSql(table: TableDefinition, group: string | null, types: ColumnTypes): Statement {
  if (table.advisoryLimit > 1) return advisorySlotTakeSql(table, group, types);
  return statement("advisory lock and take", (p) => {
    const { id, attempt } = table.columns;
    const lock = `SELECT pg_try_advisory_lock(hashtextextended(${p.ref("key")}::text, 0)) AS rc_locked`;
    const where = `(SELECT rc_locked FROM rc_lock) AND ${col("rc_src", id)} = ${p.ref("id")} AND ${renderedKey(table, "rc_src", p)} = ${p.ref("key")}::text AND ${claimable(table, group, "rc_src", p)}`;
    const sets: string[] = [];
    if (attempt !== undefined) sets.push(`${quoteIdent(attempt)} = ${col("rc_src", attempt)} + 1`);
    if (table.columns.key !== undefined) sets.push(`${quoteIdent(table.columns.key)} = NULL`);
    const take =
      sets.length === 0
        ? `SELECT ${selectList(table, types, "rc_src")} FROM ${tableRef(table)} AS rc_src WHERE ${where} FOR UPDATE`
        : `UPDATE ${tableRef(table)} AS rc_src SET ${sets.join(", ")} ` +
          `WHERE ${where} RETURNING ${selectList(table, types, "rc_src")}`;
    return (
      `WITH rc_lock AS MATERIALIZED (${lock}), rc_take AS (${take}) ` +
      `SELECT rc_lock.rc_locked AS ${quoteIdent(ADVISORY_LOCKED_ALIAS)}, rc_take.* FROM rc_lock LEFT JOIN rc_take ON true`
    );
  });
}

/** The column under which {@link advisorySlotTakeSql} reports the slot it got (1 to the limit; 0 or -1: none). */
export const ADVISORY_SLOT_ALIAS = "rowclaim$slot";

/** {@link advisoryTakeSql} for a limit above 1: the row's lock, then the first free slot (DRIVERS.md, "Per-key limits"). */
function advisorySlotTakeSql(table: TableDefinition, group: string | null, types: ColumnTypes): Statement {
  return statement("advisory slot lock and take", (p) => {
    const { id, attempt } = table.columns;
    const tryLock = (key: string): string => `pg_try_advisory_lock(hashtextextended(${key}, 0))`;
    const slots = Array.from(
      { length: table.advisoryLimit },
      (_, index) =>
        `WHEN ${tryLock(`${p.ref("key")}::text || '${ADVISORY_SLOT_SEPARATOR}${index + 1}'`)} THEN ${index + 1}`,
    ).join(" ");
    const rowKey = `${p.ref("rowKey")}::text`;
    const lock = `SELECT CASE WHEN ${tryLock(rowKey)} THEN CASE ${slots} ELSE -1 END ELSE 0 END AS rc_slot`;
    const undo = `SELECT pg_advisory_unlock(hashtextextended(${rowKey}, 0)) AS rc_u FROM rc_lock WHERE rc_lock.rc_slot = -1`;
    const where = `(SELECT rc_slot FROM rc_lock) > 0 AND ${col("rc_src", id)} = ${p.ref("id")} AND ${renderedKey(table, "rc_src", p)} = ${p.ref("key")}::text AND ${claimable(table, group, "rc_src", p)}`;
    const take =
      attempt === undefined
        ? `SELECT ${selectList(table, types, "rc_src")} FROM ${tableRef(table)} AS rc_src WHERE ${where} FOR UPDATE`
        : `UPDATE ${tableRef(table)} AS rc_src SET ${quoteIdent(attempt)} = ${col("rc_src", attempt)} + 1 ` +
          `WHERE ${where} RETURNING ${selectList(table, types, "rc_src")}`;
    return (
      `WITH rc_lock AS MATERIALIZED (${lock}), rc_undo AS MATERIALIZED (${undo}), rc_take AS (${take}) ` +
      `SELECT rc_lock.rc_slot > 0 AS ${quoteIdent(ADVISORY_LOCKED_ALIAS)}, rc_lock.rc_slot AS ${quoteIdent(ADVISORY_SLOT_ALIAS)}, ` +
      `(SELECT count(*) FROM rc_undo) AS rc_undone, rc_take.* FROM rc_lock LEFT JOIN rc_take ON true`
    );
  });
}

/** Releases a slot's lock and the row's own lock (a limit above 1), both confirmed or `false`. */
export const advisorySlotUnlock = statement(
  "advisory slot unlock",
  (p) =>
    `SELECT pg_advisory_unlock(hashtextextended(${p.ref("key")}::text, 0)) AND pg_advisory_unlock(hashtextextended(${p.ref("rowKey")}::text, 0)) AS unlocked`,
);

/** The form a settlement statement is written for: where attempts are counted, what is conditional. */
export type SettleForm = "rowLock" | "lease" | "advisory";

/** The settlement statements of one table in one form (`null` where the settlement changes nothing). */
export interface SettleStatements {
  readonly delete: Statement;
  readonly markProcessed: Statement | null;
  readonly release: Statement | null;
  readonly moveToGroup: Statement | null;
  /** Builds the move to another table (same schema, same columns). */
  moveToTable(target: string): Statement;
}

/** A data-modifying statement's text, built with the statement's parameter slots. */
type SettleText = (params: ParamSlots) => string;

/** The texts of one form's settlements of row `$id` (`null` where the settlement changes nothing). */
interface SettleTexts {
  readonly delete: SettleText;
  readonly markProcessed: SettleText | null;
  readonly release: SettleText | null;
  readonly moveToGroup: SettleText | null;
  /** The condition every settlement of the form puts on the row. */
  readonly where: SettleText;
}

/** The settlement texts of a form (see {@link settleStatements}). */
function settleTexts(table: TableDefinition, form: SettleForm): SettleTexts {
  const { id, attempt, runAt, group, processedAt, lockedUntil } = table.columns;
  const where = (p: ParamSlots): string => {
    const conditions = [`${quoteIdent(id)} = ${p.ref("id")}`];
    if (form === "lease" && lockedUntil !== undefined)
      conditions.push(`${quoteIdent(lockedUntil)} = ${p.ref("token")}`);
    // A row finished meanwhile (by hand, by a second claim) is not settled again: the settlement fails.
    if (form === "advisory" && processedAt !== undefined)
      conditions.push(`${quoteIdent(processedAt)} IS NULL`);
    return conditions.join(" AND ");
  };
  const keepSets = (): string[] => {
    const sets: string[] = [];
    if (form === "rowLock" && attempt !== undefined)
      sets.push(`${quoteIdent(attempt)} = ${quoteIdent(attempt)} + 1`);
    if (form === "lease" && lockedUntil !== undefined) sets.push(`${quoteIdent(lockedUntil)} = NULL`);
    return sets;
  };
  const update = (own: (p: ParamSlots) => string[]): SettleText | null => {
    const probe = new ParamSlots();
    if (own(probe).length === 0 && keepSets().length === 0) return null;
    return (p) => `UPDATE ${tableRef(table)} SET ${[...own(p), ...keepSets()].join(", ")} WHERE ${where(p)}`;
  };
  return {
    delete: (p) => `DELETE FROM ${tableRef(table)} WHERE ${where(p)}`,
    markProcessed:
      processedAt === undefined ? null : update((p) => [`${quoteIdent(processedAt)} = ${p.ref("at")}`]),
    release: update((p) =>
      runAt === undefined ? [] : [`${quoteIdent(runAt)} = COALESCE(${p.ref("runAt")}, ${quoteIdent(runAt)})`],
    ),
    moveToGroup: group === undefined ? null : update((p) => [`${quoteIdent(group)} = ${p.ref("group")}`]),
    where,
  };
}

/** The statements of every settlement but the move to another table, built by `build` (`null` for a `null` text). */
function inPlaceSettlements(
  texts: SettleTexts,
  build: (purpose: string, text: SettleText) => Statement,
): Omit<SettleStatements, "moveToTable"> {
  const optional = (purpose: string, text: SettleText | null): Statement | null =>
    text === null ? null : build(purpose, text);
  return {
    delete: build("delete settlement", texts.delete),
    markProcessed: optional("markProcessed settlement", texts.markProcessed),
    release: optional("release settlement", texts.release),
    moveToGroup: optional("moveToGroup settlement", texts.moveToGroup),
  };
}

/** The settlement statements of `$id`: in the lease form fenced by `$token`, in the row lock form counting the attempt. */
export function settleStatements(table: TableDefinition, form: SettleForm): SettleStatements {
  const { id, attempt, lockedUntil } = table.columns;
  const texts = settleTexts(table, form);
  return {
    ...inPlaceSettlements(texts, statement),
    moveToTable: (target) =>
      statement(`moveToTable settlement (to "${target}")`, (p) => {
        const copied = table.allColumns.filter((column) => column !== id && column !== lockedUntil);
        const values = copied.map((column) =>
          column === attempt && form === "rowLock"
            ? `rc_moved.${quoteIdent(column)} + 1`
            : `rc_moved.${quoteIdent(column)}`,
        );
        return (
          `WITH rc_moved AS (DELETE FROM ${tableRef(table)} WHERE ${texts.where(p)} RETURNING ${copied.map(quoteIdent).join(", ")}) ` +
          `INSERT INTO ${tableRef(table, target)} (${copied.map(quoteIdent).join(", ")}) SELECT ${values.join(", ")} FROM rc_moved`
        );
      }),
  };
}

/** The coalesced acks of a table, one statement each (`markProcessed` `null` without a processedAt column). */
export interface SettleManyStatements {
  readonly delete: Statement;
  readonly markProcessed: Statement | null;
}

function settleManyStatements(
  processedAt: string | undefined,
  text: (p: ParamSlots, processed?: string) => string,
): SettleManyStatements {
  const markProcessed = (p: ParamSlots): string => text(p, processedAt);
  return {
    delete: statement("coalesced delete settlement", (p) => text(p)),
    markProcessed:
      processedAt === undefined ? null : statement("coalesced markProcessed settlement", markProcessed),
  };
}

/**
 * Lease form, coalesced: settles each held row (`$ids[i]`, `$tokens[i]`) still holding its token.
 * Answers one row with a NULL `rc_id` where all were settled, else the settled ids ({@link settledAll}).
 */
export function leaseSettleManySql(table: TableDefinition, types: ColumnTypes): SettleManyStatements {
  const { id, processedAt } = table.columns;
  const idType = types.get(id) ?? "text";
  const answered = (p: ParamSlots, processed: string | undefined): string => {
    const done = "(SELECT count(*) FROM rc_settled)";
    const sent = `cardinality(${p.ref("ids")}::${idType}[])`;
    return (
      `WITH rc_settled AS (${leaseAckChange(table, types, p, processed)} RETURNING ${col("rc_done", id)} AS rc_id) ` +
      `SELECT NULL::${idType} AS rc_id WHERE ${done} = ${sent} ` +
      `UNION ALL SELECT rc_settled.rc_id FROM rc_settled WHERE ${done} < ${sent}`
    );
  };
  return settleManyStatements(processedAt, answered);
}

/** Whether a {@link leaseSettleManySql} answer says every held row was settled (one row, NULL `rc_id`). */
export function settledAll(rows: readonly Record<string, unknown>[]): boolean {
  return rows.length === 1 && rows[0]?.rc_id === null;
}

/** Row lock form, coalesced: settles every row of `$ids` as the single settlement would (`= ANY` takes the id's type). */
export function rowLockSettleManySql(table: TableDefinition): SettleManyStatements {
  const { id, attempt, processedAt } = table.columns;
  const where = (p: ParamSlots): string => `${quoteIdent(id)} = ANY(${p.ref("ids")})`;
  const counted = attempt === undefined ? "" : `, ${quoteIdent(attempt)} = ${quoteIdent(attempt)} + 1`;
  return settleManyStatements(processedAt, (p, processed) =>
    processed === undefined
      ? `DELETE FROM ${tableRef(table)} WHERE ${where(p)}`
      : `UPDATE ${tableRef(table)} SET ${quoteIdent(processed)} = ${p.ref("at")}${counted} WHERE ${where(p)}`,
  );
}

/** The column under which an advisory settle-and-unlock statement reports the rows it changed. */
export const ADVISORY_CHANGED_ALIAS = "rowclaim$changed";
/** The column under which an advisory settle-and-unlock statement reports the unlock. */
export const ADVISORY_UNLOCKED_ALIAS = "rowclaim$unlocked";

/** The advisory settlements that unlock in the same statement (`null` where none is needed). */
export interface AdvisorySettleAndUnlockStatements {
  readonly delete: Statement;
  readonly markProcessed: Statement | null;
  readonly release: Statement | null;
  readonly moveToGroup: Statement | null;
}

/**
 * Advisory form: each settlement of row `$id` and the unlock of `$key` as one statement (not the
 * move to another table). The unlock is projected from an aggregate over the settlement's
 * `RETURNING`, so it runs after the change; a take in between waits on the uncommitted row and
 * re-checks it (`UPDATE … WHERE <claimable>`), so it never sees the row as before the settlement.
 */
export function advisorySettleAndUnlockSql(table: TableDefinition): AdvisorySettleAndUnlockStatements {
  const texts = settleTexts(table, "advisory");
  const combine = (purpose: string, text: SettleText): Statement =>
    statement(
      `${purpose} and unlock`,
      (p) =>
        `WITH rc_settled AS (${text(p)} RETURNING 1) ` +
        `SELECT rc_n.rc_changed AS ${quoteIdent(ADVISORY_CHANGED_ALIAS)}, ` +
        `pg_advisory_unlock(hashtextextended(${p.ref("key")}::text, 0)) AS ${quoteIdent(ADVISORY_UNLOCKED_ALIAS)} ` +
        `FROM (SELECT count(*)::integer AS rc_changed FROM rc_settled) AS rc_n`,
    );
  return inPlaceSettlements(texts, combine);
}

/** Which optional values a publish statement carries, row by row. */
export interface PublishShape {
  readonly rows: number;
  /** Per row: whether a priority is given (else the column default). */
  readonly priority: readonly boolean[];
  /** Extra columns the statement names, and per row whether it gives each. */
  readonly extras: readonly { readonly column: string; readonly given: readonly boolean[] }[];
  /** The NOTIFY channel to signal in the same statement, if any. */
  readonly notifyChannel: string | null;
}

/** The multi-row INSERT of a publish (parameters `<field><row>`), ids in order as `rc_id`, with `pg_notify` given a channel. */
export function publishSql(table: TableDefinition, shape: PublishShape): Statement {
  return statement("publish", (p) => {
    const { payload, group, runAt, priority, headers, id } = table.columns;
    const columns: string[] = [payload];
    if (group !== undefined) columns.push(group);
    if (runAt !== undefined) columns.push(runAt);
    if (priority !== undefined) columns.push(priority);
    if (headers !== undefined) columns.push(headers);
    for (const extra of shape.extras) columns.push(extra.column);
    const tuples: string[] = [];
    for (let row = 0; row < shape.rows; row++) {
      const items = [p.ref(`payload${row}`)];
      if (group !== undefined) items.push(p.ref(`group${row}`));
      if (runAt !== undefined) items.push(p.ref(`runAt${row}`));
      if (priority !== undefined)
        items.push(shape.priority[row] === true ? p.ref(`priority${row}`) : "DEFAULT");
      if (headers !== undefined) items.push(p.ref(`headers${row}`));
      shape.extras.forEach((extra, index) => {
        items.push(extra.given[row] === true ? p.ref(`extra${index}_${row}`) : "DEFAULT");
      });
      tuples.push(`(${items.join(", ")})`);
    }
    const insert = `INSERT INTO ${tableRef(table)} (${columns.map(quoteIdent).join(", ")}) VALUES ${tuples.join(", ")} RETURNING ${quoteIdent(id)} AS rc_id`;
    if (shape.notifyChannel === null) return insert;
    return `WITH rc_ins AS (${insert}) SELECT rc_ins.rc_id, pg_notify(${p.ref("channel")}::text, '') AS rc_notified FROM rc_ins`;
  });
}

/** Starts listening on a channel (the channel is quoted as an identifier). */
export function listenSql(channel: string): string {
  return `LISTEN ${quoteIdent(channel)}`;
}

/** Stops every LISTEN of the session. */
export const unlistenAllSql = "UNLISTEN *";

/**
 * The fillfactor of a table whose claim rewrites each row it takes (lease: the expiry; advisory:
 * the attempt): a little over half of each page is left free when rows are published, so the
 * claimed version fits on the row's own page and the claim is a heap-only update, writing no
 * index entry (DRIVERS.md, "Room for the claimed version").
 */
export const CLAIM_REWRITE_FILLFACTOR = 45;

/** Whether the claims of `table` rewrite each row they take (see {@link CLAIM_REWRITE_FILLFACTOR}). */
function claimRewritesRows(table: TableDefinition): boolean {
  return table.form === "lease" || (table.form === "advisory" && table.columns.attempt !== undefined);
}

/**
 * The recommended `CREATE TABLE` (with {@link CLAIM_REWRITE_FILLFACTOR} where the claim rewrites
 * rows), its claim-order index (partial on unfinished rows) and the key's unique index.
 */
export function schemaSql(table: TableDefinition): string {
  const c = table.columns;
  const payloadType =
    table.payloadType === "json" ? "jsonb" : table.payloadType === "text" ? "text" : "bytea";
  const lines = [
    `${quoteIdent(c.id)} bigserial PRIMARY KEY`,
    `${quoteIdent(c.payload)} ${payloadType} NOT NULL`,
  ];
  if (c.attempt !== undefined) lines.push(`${quoteIdent(c.attempt)} integer NOT NULL DEFAULT 1`);
  if (c.runAt !== undefined) lines.push(`${quoteIdent(c.runAt)} timestamptz`);
  if (c.priority !== undefined) lines.push(`${quoteIdent(c.priority)} integer NOT NULL DEFAULT 0`);
  if (c.group !== undefined) lines.push(`${quoteIdent(c.group)} text`);
  if (c.processedAt !== undefined) lines.push(`${quoteIdent(c.processedAt)} timestamptz`);
  if (c.lockedUntil !== undefined) lines.push(`${quoteIdent(c.lockedUntil)} timestamptz`);
  if (c.headers !== undefined) lines.push(`${quoteIdent(c.headers)} jsonb`);
  if (c.key !== undefined) lines.push(`${quoteIdent(c.key)} text`);
  for (const extra of table.extraColumns) lines.push(`${quoteIdent(extra)} text`);
  const indexCols: string[] = [];
  if (c.group !== undefined) indexCols.push(quoteIdent(c.group));
  if (c.priority !== undefined) indexCols.push(quoteIdent(c.priority));
  if (c.runAt !== undefined) indexCols.push(`${quoteIdent(c.runAt)} NULLS FIRST`);
  indexCols.push(quoteIdent(c.id));
  const partial = c.processedAt === undefined ? "" : ` WHERE ${quoteIdent(c.processedAt)} IS NULL`;
  const indexName = quoteIdent(`${table.name}_claim_order`.slice(0, 63));
  const storage = claimRewritesRows(table) ? ` WITH (fillfactor = ${CLAIM_REWRITE_FILLFACTOR})` : "";
  return (
    `CREATE TABLE IF NOT EXISTS ${tableRef(table)} (\n  ${lines.join(",\n  ")}\n)${storage};\n` +
    `CREATE INDEX IF NOT EXISTS ${indexName} ON ${tableRef(table)} (${indexCols.join(", ")})${partial};\n` +
    (c.key === undefined ? "" : uniqueIndexSql(table))
  );
}

/** The name of a table's key index: `<table>_key`, cut to PostgreSQL's 63 bytes. */
export function uniqueIndexName(table: TableDefinition): string {
  return `${table.name}_key`.slice(0, 63);
}

/** `CREATE UNIQUE INDEX IF NOT EXISTS` on the key column (NULLs, the keys of claimed rows, are distinct). */
export function uniqueIndexSql(table: TableDefinition): string {
  const key = table.columns.key as string;
  return `CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(uniqueIndexName(table))} ON ${tableRef(table)} (${quoteIdent(key)});\n`;
}
