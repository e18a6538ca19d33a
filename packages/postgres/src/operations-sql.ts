/**
 * The SQL of the operations capability (DRIVERS.md, "Operations"): nothing waits on a row or key
 * another session holds, and every statement changes at most one batch (`$limit` or `$ids`).
 *
 * @module
 */
import { keyColumnOf, type RowFilter, type RowState, type TableDefinition } from "@rowclaim/core";
import {
  col,
  PAYLOAD_TEXT_ALIAS,
  type ParamSlots,
  quoteIdent,
  renderedKey,
  type Statement,
  statement,
  tableRef,
} from "./sql.js";

/** The alias under which a listing says whether the row is in work. */
export const IN_WORK_ALIAS = "rowclaim$in_work";

/** The alias under which a listing names the session holding the row's advisory key, if any. */
export const HOLDER_ALIAS = "rowclaim$holder";

/** The alias under which a listing gives the row's rendered advisory key. */
export const KEY_ALIAS = "rowclaim$key";

/** Every described column, the payload of a json table also as text (for `decodePayload`). */
function columnsList(table: TableDefinition, alias: string): string {
  return table.allColumns
    .map((column) =>
      column === table.columns.payload && table.payloadType === "json"
        ? `${col(alias, column)}::text AS ${quoteIdent(PAYLOAD_TEXT_ALIAS)}, ${col(alias, column)}`
        : col(alias, column),
    )
    .join(", ");
}

/** The payload as text, for search. */
function payloadText(table: TableDefinition, alias: string): string {
  const payload = col(alias, table.columns.payload);
  return table.payloadType === "bytes" ? `encode(${payload}, 'escape')` : `${payload}::text`;
}

/** Unfinished (`processedAt` NULL) and not in the dead-letter group `$deadGroup`. */
function queued(table: TableDefinition, alias: string, p: ParamSlots, deadGroup: string | null): string[] {
  const { processedAt, group } = table.columns;
  const out: string[] = [];
  if (processedAt !== undefined) out.push(`${col(alias, processedAt)} IS NULL`);
  if (group !== undefined && deadGroup !== null)
    out.push(`${col(alias, group)} IS DISTINCT FROM ${p.ref("deadGroup")}::text`);
  return out;
}

/** The selection: ids (`$ids`) or keys (`$keys`). */
function selected(table: TableDefinition, alias: string, p: ParamSlots, by: "ids" | "keys"): string {
  if (by === "ids") return `${col(alias, table.columns.id)} = ANY(${p.ref("ids")})`;
  const key = keyColumnOf(table);
  if (key === undefined) return "FALSE";
  return `${col(alias, key)} = ANY(${p.ref("keys")}::text[])`;
}

/** The lease condition: no unexpired lease. */
function leaseFree(table: TableDefinition, alias: string, p: ParamSlots): string[] {
  const until = table.columns.lockedUntil;
  if (table.form !== "lease" || until === undefined) return [];
  return [`(${col(alias, until)} IS NULL OR ${col(alias, until)} <= ${p.ref("now")}::timestamptz)`];
}

/**
 * One batch of a row action: deletes (or makes due) the selected rows in scope not in work, and
 * answers every selected row with whether it changed. Run it in a transaction (advisory try-locks).
 */
export function rowActionSql(
  table: TableDefinition,
  kind: "delete" | "makeDue",
  scope: "queued" | "any",
  by: "ids" | "keys",
  deadGroup: string | null,
): Statement {
  return statement(`operations ${kind} (${scope})`, (p) => {
    const { id, runAt } = table.columns;
    const key = keyColumnOf(table);
    const inScope = [
      selected(table, "rc_t", p, by),
      ...(scope === "queued" ? queued(table, "rc_t", p, deadGroup) : []),
    ];
    const candidates =
      `SELECT ${col("rc_t", id)} AS rc_id${key === undefined ? "" : `, ${col("rc_t", key)}::text AS rc_key`}` +
      (table.form === "advisory" ? `, ${renderedKey(table, "rc_t", p)} AS rc_akey` : "") +
      ` FROM ${tableRef(table)} AS rc_t WHERE ${[...inScope, ...leaseFree(table, "rc_t", p)].join(" AND ")} ` +
      `ORDER BY ${col("rc_t", id)} FOR UPDATE SKIP LOCKED`;
    const free =
      table.form === "advisory"
        ? `SELECT rc_c.* FROM rc_candidates AS rc_c WHERE pg_try_advisory_xact_lock(hashtextextended(rc_c.rc_akey, 0))`
        : "SELECT * FROM rc_candidates";
    const change =
      kind === "delete"
        ? `DELETE FROM ${tableRef(table)} AS rc_d USING rc_free WHERE ${col("rc_d", id)} = rc_free.rc_id RETURNING ${col("rc_d", id)} AS rc_id`
        : `UPDATE ${tableRef(table)} AS rc_d SET ${quoteIdent(runAt ?? id)} = ${runAt === undefined ? quoteIdent(id) : `${p.ref("now")}::timestamptz`} FROM rc_free WHERE ${col("rc_d", id)} = rc_free.rc_id RETURNING ${col("rc_d", id)} AS rc_id`;
    const all =
      `SELECT ${col("rc_a", id)} AS rc_id${key === undefined ? "" : `, ${col("rc_a", key)}::text AS rc_key`} FROM ${tableRef(table)} AS rc_a ` +
      `WHERE ${[selected(table, "rc_a", p, by), ...(scope === "queued" ? queued(table, "rc_a", p, deadGroup) : [])].join(" AND ")}`;
    return (
      `WITH rc_candidates AS MATERIALIZED (${candidates}), rc_free AS MATERIALIZED (${free}), rc_changed AS (${change}), rc_all AS (${all}) ` +
      `SELECT rc_all.rc_id, ${key === undefined ? "NULL::text" : "rc_all.rc_key"} AS rc_key, ` +
      `EXISTS (SELECT 1 FROM rc_changed WHERE rc_changed.rc_id = rc_all.rc_id) AS rc_changed FROM rc_all`
    );
  });
}

/** One batch of a redrive from the dead-letter group: the first `$limit` dead rows back to `$group`, attempt 1, due now. */
export function redriveGroupSql(table: TableDefinition, withIds: boolean, withText: boolean): Statement {
  return statement("operations redrive (group)", (p) => {
    const { id, attempt, runAt, group, lockedUntil } = table.columns;
    if (group === undefined) throw new Error("rowclaim/postgres: a group dead letter needs a group column.");
    const where = [`${col("rc_s", group)} = ${p.ref("from")}::text`];
    if (withIds) where.push(`${col("rc_s", id)} = ANY(${p.ref("ids")})`);
    if (withText) where.push(`strpos(${payloadText(table, "rc_s")}, ${p.ref("text")}::text) > 0`);
    const sets = [`${quoteIdent(group)} = ${p.ref("group")}::text`];
    if (attempt !== undefined) sets.push(`${quoteIdent(attempt)} = 1`);
    if (runAt !== undefined) sets.push(`${quoteIdent(runAt)} = ${p.ref("now")}::timestamptz`);
    if (lockedUntil !== undefined) sets.push(`${quoteIdent(lockedUntil)} = NULL`);
    return (
      `UPDATE ${tableRef(table)} AS rc_u SET ${sets.join(", ")} WHERE ${col("rc_u", id)} IN (` +
      `SELECT ${col("rc_s", id)} FROM ${tableRef(table)} AS rc_s WHERE ${where.join(" AND ")} ` +
      `ORDER BY ${col("rc_s", id)} LIMIT ${p.ref("limit")}::int FOR UPDATE SKIP LOCKED)`
    );
  });
}

/** One batch of a redrive from the dead-letter table: the first `$limit` rows moved back (new ids), attempt 1, due now. */
export function redriveTableSql(
  table: TableDefinition,
  deadTable: string,
  withIds: boolean,
  withText: boolean,
): Statement {
  return statement(`operations redrive (from "${deadTable}")`, (p) => {
    const { id, attempt, runAt, group, lockedUntil } = table.columns;
    const copied = table.allColumns.filter((column) => column !== id && column !== lockedUntil);
    const where: string[] = [];
    if (withIds) where.push(`${col("rc_s", id)} = ANY(${p.ref("ids")})`);
    if (withText) where.push(`strpos(${payloadText(table, "rc_s")}, ${p.ref("text")}::text) > 0`);
    const values = copied.map((column) =>
      column === attempt
        ? "1"
        : column === runAt
          ? `${p.ref("now")}::timestamptz`
          : column === group
            ? `${p.ref("group")}::text`
            : `rc_m.${quoteIdent(column)}`,
    );
    return (
      `WITH rc_m AS (DELETE FROM ${tableRef(table, deadTable)} AS rc_d WHERE ${col("rc_d", id)} IN (` +
      `SELECT ${col("rc_s", id)} FROM ${tableRef(table, deadTable)} AS rc_s${where.length === 0 ? "" : ` WHERE ${where.join(" AND ")}`} ` +
      `ORDER BY ${col("rc_s", id)} LIMIT ${p.ref("limit")}::int FOR UPDATE SKIP LOCKED) ` +
      `RETURNING ${[col("rc_d", id), ...copied.filter((c) => c !== id).map((c) => col("rc_d", c))].join(", ")}) ` +
      `INSERT INTO ${tableRef(table)} (${copied.map(quoteIdent).join(", ")}) ` +
      `SELECT ${values.join(", ")} FROM rc_m ORDER BY rc_m.${quoteIdent(id)}`
    );
  });
}

/** One batch of a prune: the `$limit` oldest rows processed before `$before`, deleted. */
export function pruneSql(table: TableDefinition): Statement {
  return statement("operations prune", (p) => {
    const { id, processedAt } = table.columns;
    if (processedAt === undefined) throw new Error("rowclaim/postgres: prune needs a processedAt column.");
    return (
      `DELETE FROM ${tableRef(table)} WHERE ${quoteIdent(id)} IN (` +
      `SELECT ${quoteIdent(id)} FROM ${tableRef(table)} WHERE ${quoteIdent(processedAt)} < ${p.ref("before")}::timestamptz ` +
      `ORDER BY ${quoteIdent(processedAt)} LIMIT ${p.ref("limit")}::int FOR UPDATE SKIP LOCKED)`
    );
  });
}

/** The prune lock: a transaction lock on the table's prune key, tried without waiting, held in an open transaction. */
export const pruneLockSql = statement(
  "operations prune lock",
  (p) => `SELECT pg_try_advisory_xact_lock(hashtextextended(${p.ref("key")}::text, 0)) AS rc_locked`,
);

/** The key of a table's prune lock. */
export function pruneLockKey(table: TableDefinition): string {
  return `rowclaim-prune:${table.schema ?? ""}.${table.name}`;
}

/** Whether the row (alias `rc_r`) is in work: an unexpired lease, a row lock (seen without waiting), a held key. */
function inWorkExpression(table: TableDefinition, p: ParamSlots): string {
  const { id, lockedUntil } = table.columns;
  switch (table.form) {
    case "lease":
      return lockedUntil === undefined
        ? "FALSE"
        : `(${col("rc_r", lockedUntil)} IS NOT NULL AND ${col("rc_r", lockedUntil)} > ${p.ref("now")}::timestamptz)`;
    case "rowLock":
      // FOR KEY SHARE conflicts with a claim's FOR UPDATE only: settlements are not held up.
      return `NOT EXISTS (SELECT 1 FROM ${tableRef(table)} AS rc_k WHERE ${col("rc_k", id)} = ${col("rc_r", id)} FOR KEY SHARE SKIP LOCKED)`;
    case "advisory":
      return `hashtextextended(${renderedKey(table, "rc_r", p)}, 0) IN (SELECT rc_h FROM rc_held)`;
  }
}

/** The conditions of a filter over alias `rc_r`. */
function filterConditions(table: TableDefinition, filter: RowFilter, p: ParamSlots): string[] {
  const out: string[] = [];
  if (filter.ids !== undefined) out.push(`${col("rc_r", table.columns.id)} = ANY(${p.ref("ids")})`);
  const key = keyColumnOf(table);
  if (filter.keys !== undefined)
    out.push(key === undefined ? "FALSE" : `${col("rc_r", key)} = ANY(${p.ref("keys")}::text[])`);
  if (filter.text !== undefined)
    out.push(`strpos(${payloadText(table, "rc_r")}, ${p.ref("text")}::text) > 0`);
  if (filter.group !== undefined && table.columns.group !== undefined) {
    out.push(
      filter.group === null
        ? `${col("rc_r", table.columns.group)} IS NULL`
        : `${col("rc_r", table.columns.group)} = ${p.ref("group")}::text`,
    );
  }
  return out;
}

/** The conditions of a state over alias `rc_r`. */
function stateConditions(
  table: TableDefinition,
  state: RowState | undefined,
  deadGroup: string | null,
  inWork: () => string,
  p: ParamSlots,
): string[] {
  const { processedAt, group, runAt } = table.columns;
  // Built only where used: a parameter the text never names has no type.
  const due = (): string =>
    runAt === undefined
      ? "TRUE"
      : `(${col("rc_r", runAt)} IS NULL OR ${col("rc_r", runAt)} <= ${p.ref("now")}::timestamptz)`;
  switch (state) {
    case undefined:
      return [];
    case "processed":
      return processedAt === undefined ? ["FALSE"] : [`${col("rc_r", processedAt)} IS NOT NULL`];
    case "dead":
      return group === undefined || deadGroup === null
        ? ["FALSE"]
        : [...queued(table, "rc_r", p, null), `${col("rc_r", group)} = ${p.ref("deadGroup")}::text`];
    case "inWork":
      return [...queued(table, "rc_r", p, deadGroup), inWork()];
    case "due":
      return [...queued(table, "rc_r", p, deadGroup), due(), `NOT ${inWork()}`];
    case "delayed":
      return [...queued(table, "rc_r", p, deadGroup), `NOT ${due()}`, `NOT ${inWork()}`];
  }
}

/** The `pg_locks` CTE of the advisory keys held in this database, with the backend pid holding each. */
function heldCte(table: TableDefinition): string {
  if (table.form !== "advisory") return "";
  return (
    "WITH rc_held AS MATERIALIZED (SELECT ((rc_l.classid::bigint << 32) | rc_l.objid::bigint) AS rc_h, rc_l.pid AS rc_pid " +
    "FROM pg_catalog.pg_locks AS rc_l WHERE rc_l.locktype = 'advisory' AND rc_l.objsubid = 1 AND rc_l.granted " +
    "AND rc_l.database = (SELECT rc_d.oid FROM pg_catalog.pg_database AS rc_d WHERE rc_d.datname = current_database())) "
  );
}

/** What a listing selects beside the columns: in work, the holder's session, the rendered key. */
function extras(table: TableDefinition, inWork: string, p: ParamSlots): string {
  const base = `${inWork} AS ${quoteIdent(IN_WORK_ALIAS)}`;
  if (table.form !== "advisory")
    return `${base}, NULL::text AS ${quoteIdent(HOLDER_ALIAS)}, NULL::text AS ${quoteIdent(KEY_ALIAS)}`;
  const key = renderedKey(table, "rc_r", p);
  return (
    `${base}, (SELECT rc_held.rc_pid::text FROM rc_held WHERE rc_held.rc_h = hashtextextended(${key}, 0) LIMIT 1) AS ${quoteIdent(HOLDER_ALIAS)}, ` +
    `${key} AS ${quoteIdent(KEY_ALIAS)}`
  );
}

/** Which optional parameters a listing names. */
export interface ListShape {
  readonly state: RowState | undefined;
  readonly filter: RowFilter;
  readonly deadGroup: string | null;
  readonly after: boolean;
}

/** One page of rows in id order: `$after` the cursor, at most `$limit`. */
export function listSql(table: TableDefinition, shape: ListShape): Statement {
  return statement("operations list", (p) => {
    const inWork = (): string => inWorkExpression(table, p);
    const where = [
      ...filterConditions(table, shape.filter, p),
      ...stateConditions(table, shape.state, shape.deadGroup, inWork, p),
      ...(shape.after ? [`${col("rc_r", table.columns.id)} > ${p.ref("after")}`] : []),
    ];
    return (
      `${heldCte(table)}SELECT ${columnsList(table, "rc_r")}, ${extras(table, inWork(), p)} FROM ${tableRef(table)} AS rc_r` +
      `${where.length === 0 ? "" : ` WHERE ${where.join(" AND ")}`} ORDER BY ${col("rc_r", table.columns.id)} LIMIT ${p.ref("limit")}::int`
    );
  });
}

/** How many rows match, at most `$cap`. */
export function countSql(table: TableDefinition, shape: Omit<ListShape, "after">): Statement {
  return statement("operations count", (p) => {
    const inWork = (): string => inWorkExpression(table, p);
    const where = [
      ...filterConditions(table, shape.filter, p),
      ...stateConditions(table, shape.state, shape.deadGroup, inWork, p),
    ];
    return (
      `${heldCte(table)}SELECT count(*)::int AS rc_count FROM (SELECT 1 FROM ${tableRef(table)} AS rc_r` +
      `${where.length === 0 ? "" : ` WHERE ${where.join(" AND ")}`} LIMIT ${p.ref("cap")}::bigint) AS rc_capped`
    );
  });
}
