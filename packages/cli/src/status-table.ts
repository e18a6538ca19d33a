/**
 * The table `rowclaim status` reads when no config module describes it: described from the live
 * table's columns, by the standard layout's names (`queue`, `run_at`, `processed_at`,
 * `locked_until`, …) or the names the `--*-column` flags give (the payload is never read), with the form `--form` names
 * (default: lease where the table has the lease column, else row lock).
 *
 * @module
 */
import { type ClaimFormName, type ColumnRole, defineTable, type TableDefinition } from "@rowclaim/core";
import type { AdminConnection } from "./admin-connection.js";
import { columnListSql } from "./admin-sql.js";
import { UsageError } from "./args.js";
import { defaultKey, standardColumns } from "./tables.js";

/** A table `status` was asked about does not exist. */
export class TableNotFoundError extends Error {
  constructor(table: string) {
    super(`Table "${table}" does not exist in this database (or has no columns the connection can see).`);
    this.name = "TableNotFoundError";
  }
}

/** The roles the `--*-column` flags may rename. */
export type RenamedRole = "group" | "runAt" | "processedAt" | "lockedUntil" | "attempt" | "priority";

/** How a table without a description is read. */
export interface UndescribedTable {
  readonly name: string;
  /** Column names of roles, where they differ from the standard layout's. */
  readonly names: Partial<Record<RenamedRole, string>>;
  /** The claim form; default lease where the table has the lease column, else row lock. */
  readonly form: ClaimFormName | undefined;
  /** The advisory key template (advisory form); default `"<table>:{queue}"`. */
  readonly key: string | undefined;
  /** The dead-letter group, if rows move to one. */
  readonly deadLetterGroup: string | undefined;
}

/** The names of the live table's columns. */
export async function liveColumns(admin: AdminConnection, table: string): Promise<ReadonlySet<string>> {
  const present = new Set(
    (await admin.query(columnListSql(admin.dialect), [table])).map((row) => String(row.name)),
  );
  if (present.size === 0) throw new TableNotFoundError(table);
  return present;
}

/**
 * Describes `wanted` from the columns `present` holds: the standard roles found there (or
 * renamed), the form, the key and the dead-letter group.
 *
 * @throws {UsageError} when the table lacks `id`, or the form cannot be described on it.
 */
export function describeLiveTable(wanted: UndescribedTable, present: ReadonlySet<string>): TableDefinition {
  const columns: Partial<Record<ColumnRole, string>> = {};
  const roles = ["id", "attempt", "runAt", "priority", "group", "processedAt", "lockedUntil"] as const;
  for (const role of roles) {
    const name = (role === "id" ? undefined : wanted.names[role]) ?? standardColumns[role];
    if (present.has(name)) columns[role] = name;
  }
  if (columns.id === undefined)
    throw new UsageError(
      `table ${wanted.name} has no ${standardColumns.id} column: describe it in a config module (--config).`,
      "status",
    );
  // Status never reads the payload: the description only needs a name for it.
  columns.payload = standardColumns.payload;
  const form = wanted.form ?? (columns.lockedUntil === undefined ? "rowLock" : "lease");
  if (form !== "lease") delete columns.lockedUntil;
  else if (columns.lockedUntil === undefined)
    throw new UsageError(
      `--form lease needs the table's lease column (locked_until, or --locked-until-column).`,
      "status",
    );
  const { deadLetterGroup } = wanted;
  if (deadLetterGroup !== undefined && (columns.group === undefined || columns.attempt === undefined))
    throw new UsageError(
      `--dead-letter-group needs the table's group and attempt columns (${standardColumns.group}, ${standardColumns.attempt}).`,
      "status",
    );
  const key = form === "advisory" ? (wanted.key ?? defaultKey(wanted.name)) : undefined;
  const keyColumns =
    key === undefined
      ? []
      : [...key.matchAll(/\{([^{}]*)\}/g)]
          .map((match) => match[1] as string)
          .filter((name) => !Object.values(columns).includes(name));
  try {
    return defineTable({
      name: wanted.name,
      columns: columns as { id: string; payload: string },
      ...(keyColumns.length === 0 ? {} : { extraColumns: [...new Set(keyColumns)] }),
      ...(key === undefined ? {} : { advisoryLock: key }),
      // The attempt cap is not read by status: the dead-letter group needs one to be described.
      ...(deadLetterGroup === undefined ? {} : { maxAttempts: 1, deadLetter: { group: deadLetterGroup } }),
    });
  } catch (error) {
    if (error instanceof Error && (error as { code?: unknown }).code === "DECLARATION")
      throw new UsageError(error.message, "status");
    throw error;
  }
}
