/**
 * The SQL of unique jobs on PostgreSQL (DRIVERS.md, "Unique jobs"): the insert that lets the key's
 * unique index decide (`ON CONFLICT (key) DO NOTHING` to keep, `DO UPDATE` to replace), and the index check.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { quoteIdent, type Statement, statement, tableRef } from "./sql.js";

/**
 * One unique row: inserted, or the queued holder of `$key` kept or (`replace`) its payload, run
 * time, priority (given) and headers replaced. Returns `rc_id` and `rc_inserted`; no row when the
 * holder was claimed between the insert and the read (the caller tries again).
 */
export function uniquePublishSql(
  table: TableDefinition,
  replace: boolean,
  extras: readonly string[],
  priorityGiven: boolean,
): Statement {
  return statement(replace ? "unique publish (replace)" : "unique publish (keep)", (p) => {
    const { payload, group, runAt, priority, headers, id } = table.columns;
    const key = table.columns.key as string;
    const given: [string | undefined, string][] = [
      [payload, "payload"],
      [group, "group"],
      [runAt, "runAt"],
      [priorityGiven ? priority : undefined, "priority"],
      [headers, "headers"],
      ...extras.map((column, index): [string, string] => [column, `extra${index}`]),
      [key, "key"],
    ];
    const columns: string[] = [];
    const items: string[] = [];
    for (const [column, param] of given) {
      if (column === undefined) continue;
      columns.push(column);
      items.push(p.ref(param));
    }
    const insert = `INSERT INTO ${tableRef(table)} AS rc_row (${columns.map(quoteIdent).join(", ")}) VALUES (${items.join(", ")})`;
    if (replace) {
      const sets = [payload, runAt, headers, priorityGiven ? priority : undefined]
        .filter((column): column is string => column !== undefined)
        .map((column) => `${quoteIdent(column)} = EXCLUDED.${quoteIdent(column)}`);
      return (
        `${insert} ON CONFLICT (${quoteIdent(key)}) DO UPDATE SET ${sets.join(", ")} ` +
        `RETURNING rc_row.${quoteIdent(id)} AS rc_id, (rc_row.xmax = 0) AS rc_inserted`
      );
    }
    return (
      `WITH rc_ins AS (${insert} ON CONFLICT (${quoteIdent(key)}) DO NOTHING RETURNING ${quoteIdent(id)}) ` +
      `SELECT ${quoteIdent(id)} AS rc_id, true AS rc_inserted FROM rc_ins ` +
      `UNION ALL SELECT ${quoteIdent(id)}, false FROM ${tableRef(table)} ` +
      `WHERE ${quoteIdent(key)} = ${p.ref("key")} AND NOT EXISTS (SELECT 1 FROM rc_ins)`
    );
  });
}

/** Whether a unique, non-partial index on exactly the key column exists (`rc_found`): `$1` schema (NULL: search path), `$2` table, `$3` column. */
export const uniqueIndexCheckSql =
  "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid " +
  "JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0] " +
  "WHERE i.indisunique AND i.indnatts = 1 AND i.indpred IS NULL AND t.relname = $2 AND a.attname = $3 " +
  "AND (CASE WHEN $1::text IS NULL THEN pg_table_is_visible(t.oid) ELSE n.nspname = $1::text END)) AS rc_found";
