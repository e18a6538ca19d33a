/**
 * The SQL of unique jobs on PostgreSQL: the key column's unique index, the insert that lets the
 * index decide (`ON CONFLICT (key) DO NOTHING` to keep, `DO UPDATE` to replace), and the check
 * that the index exists. A row gives up its key when it is claimed (the lease claim and the
 * advisory take write NULL into it, committed before the handler runs), so a conflict is always
 * with a queued row, whose lock (if a claim holds it) lasts one short statement.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { quoteIdent, type Statement, statement, tableRef } from "./sql.js";

/**
 * One unique row: inserts it, or on a queued row holding `$key` keeps it (`replace: false`:
 * `ON CONFLICT DO NOTHING`, then the holder's id read in the same statement) or replaces its
 * payload, run time, priority (where given) and headers (`replace: true`: `ON CONFLICT DO
 * UPDATE`). Returns `rc_id` and `rc_inserted`; no row when the holder was claimed or finished
 * between the insert and the read (the caller tries again). Parameters: `payload`, `group`,
 * `runAt`, `priority` (NULL: the column's default, or unchanged on replace), `headers`, `key`,
 * and `extra<i>` for each extra column given.
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
    const columns: string[] = [payload];
    const items: string[] = [p.ref("payload")];
    if (group !== undefined) {
      columns.push(group);
      items.push(p.ref("group"));
    }
    if (runAt !== undefined) {
      columns.push(runAt);
      items.push(p.ref("runAt"));
    }
    if (priority !== undefined && priorityGiven) {
      columns.push(priority);
      items.push(p.ref("priority"));
    }
    if (headers !== undefined) {
      columns.push(headers);
      items.push(p.ref("headers"));
    }
    extras.forEach((column, index) => {
      columns.push(column);
      items.push(p.ref(`extra${index}`));
    });
    columns.push(key);
    items.push(p.ref("key"));
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

/**
 * Whether a unique, non-partial index on exactly the key column exists (`rc_found`), for the
 * schema check at open. Parameters: `$1` the schema (NULL: the search path), `$2` the table,
 * `$3` the key column.
 */
export const uniqueIndexCheckSql =
  "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid " +
  "JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0] " +
  "WHERE i.indisunique AND i.indnatts = 1 AND i.indpred IS NULL AND t.relname = $2 AND a.attname = $3 " +
  "AND (CASE WHEN $1::text IS NULL THEN pg_table_is_visible(t.oid) ELSE n.nspname = $1::text END)) AS rc_found";
