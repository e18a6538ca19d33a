/**
 * The table layout the command line creates and reads: one fixed column name per role, so that
 * `schema`, `demo`, `bench` and `status` agree without configuration.
 *
 * @module
 */
import {
  type ClaimFormName,
  type ColumnRole,
  defineTable,
  type PayloadType,
  type TableColumns,
  type TableDefinition,
} from "@rowclaim/core";
import { UsageError } from "./args.js";

/** The claim forms, in the order the command line shows them. */
export const formNames: readonly ClaimFormName[] = Object.freeze(["lease", "advisory", "rowLock"]);

/** The table name suffix of each form in the tables `demo` and `bench` create (`<prefix>_<suffix>`). */
export const formTableSuffix: Readonly<Record<ClaimFormName, string>> = Object.freeze({
  lease: "lease",
  advisory: "advisory",
  rowLock: "row_lock",
});

/** The column name of each role in tables the command line creates. */
export const standardColumns: Readonly<Required<TableColumns>> = Object.freeze({
  id: "id",
  payload: "payload",
  attempt: "attempt",
  runAt: "run_at",
  priority: "priority",
  group: "queue",
  processedAt: "processed_at",
  lockedUntil: "locked_until",
  headers: "headers",
  key: "job_key",
});

/** How a table of the standard layout is made. */
export interface StandardTableOptions {
  /** The table's name. */
  readonly name: string;
  /** The claim form: `lease` adds `locked_until`, `advisory` sets the key template. */
  readonly form: ClaimFormName;
  /** How the payload is held. Default `json`. */
  readonly payloadType?: PayloadType;
  /** Whether acked rows are kept and marked in `processed_at` (else deleted). Default false. */
  readonly processedAt?: boolean;
  /** Whether the table has a `headers` column. Default false. */
  readonly headers?: boolean;
  /**
   * The advisory key template (advisory form). Placeholders that name no standard column become
   * extra columns. Default `"<name>:{queue}"`: one row of each queue at a time.
   */
  readonly key?: string;
  /** The lease in seconds (lease form; ignored by the others). */
  readonly lease?: number;
  /** With {@link StandardTableOptions.deadLetterGroup}: deliveries before a row moves out. */
  readonly maxAttempts?: number;
  /** With {@link StandardTableOptions.maxAttempts}: the group dead rows move to. */
  readonly deadLetterGroup?: string;
}

/** The default advisory key template of a table: its name, a colon and the queue column. */
export function defaultKey(name: string): string {
  return `${name}:{${standardColumns.group}}`;
}

/**
 * Describes a table of the standard layout and validates it with core's `defineTable`.
 *
 * @throws {UsageError} when the description cannot work (for example a key with a broken
 * placeholder); the message is core's `DeclarationError`'s.
 */
export function standardTable(options: StandardTableOptions): TableDefinition {
  const roles: ColumnRole[] = ["id", "payload", "attempt", "runAt", "priority", "group"];
  if (options.processedAt === true) roles.push("processedAt");
  if (options.form === "lease") roles.push("lockedUntil");
  if (options.headers === true) roles.push("headers");
  const columns: Partial<Record<ColumnRole, string>> = {};
  for (const role of roles) columns[role] = standardColumns[role];
  const taken = new Set(Object.values(columns));
  const key = options.form === "advisory" ? (options.key ?? defaultKey(options.name)) : undefined;
  const extraColumns = key === undefined ? [] : placeholders(key).filter((column) => !taken.has(column));
  try {
    return defineTable({
      name: options.name,
      columns: columns as TableColumns,
      ...(extraColumns.length > 0 ? { extraColumns: [...new Set(extraColumns)] } : {}),
      ...(options.payloadType === undefined ? {} : { payloadType: options.payloadType }),
      ...(key === undefined ? {} : { advisoryLock: key }),
      ...(options.lease === undefined || options.form !== "lease" ? {} : { lease: options.lease }),
      ...(options.maxAttempts === undefined || options.deadLetterGroup === undefined
        ? {}
        : { maxAttempts: options.maxAttempts, deadLetter: { group: options.deadLetterGroup } }),
    });
  } catch (error) {
    if (error instanceof Error && (error as { code?: unknown }).code === "DECLARATION")
      throw new UsageError(error.message);
    throw error;
  }
}

/** The column names a key template's `{placeholders}` name, in order (duplicates kept out). */
export function placeholders(template: string): string[] {
  const names: string[] = [];
  for (const match of template.matchAll(/\{([^{}]*)\}/g)) {
    const name = match[1] as string;
    if (name !== "" && !names.includes(name)) names.push(name);
  }
  return names;
}

/**
 * Checks a `--prefix` for the tables `demo` and `bench` create: a letter or `_`, then up to 39
 * letters, digits or `_`, so every table name it makes is a plain identifier on every database.
 *
 * @throws {UsageError} otherwise.
 */
export function checkPrefix(prefix: string, command: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,39}$/.test(prefix)) {
    throw new UsageError(
      `--prefix "${prefix}" must be a letter or _ then up to 39 letters, digits or _.`,
      command,
    );
  }
}
