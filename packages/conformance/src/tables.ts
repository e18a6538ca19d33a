/**
 * The table descriptions the suite's tests use: one shape per claim form, with the optional
 * roles a test asks for.
 *
 * @module
 */
import type {
  ClaimFormName,
  ColumnRole,
  DeadLetterTarget,
  PayloadType,
  TableDescription,
} from "@rowclaim/core";

/** The column name the suite gives each role. */
export const columnNames = Object.freeze({
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
} satisfies Record<ColumnRole, string>);

/** Every claim form, in the order the suite reports them. */
export const allForms: readonly ClaimFormName[] = Object.freeze(["rowLock", "lease", "advisory"]);

/** The forms a FIFO table may take (the advisory lock form puts the group into its key instead). */
export const fifoForms: readonly ClaimFormName[] = Object.freeze(["rowLock", "lease"]);

/** Human names of the forms, for test titles and skip reasons: core's, as its messages write them. */
export { formLabels } from "@rowclaim/core/driver";

/** What a test asks of its table, beyond the form. */
export interface TableShape {
  /** Optional roles to include (`lockedUntil` is added for the lease form by itself). Default: attempt, runAt, priority. */
  readonly roles?: readonly Exclude<ColumnRole, "id" | "payload" | "lockedUntil">[];
  readonly payloadType?: PayloadType;
  readonly fifo?: boolean;
  /** Lease in seconds (lease form). Default 1. */
  readonly lease?: number;
  /** Advisory form: the column the key names after the table's name (default `id`: one key a row). */
  readonly keyColumn?: string;
  readonly extraColumns?: readonly string[];
  readonly maxAttempts?: number;
  readonly deadLetter?: DeadLetterTarget;
  readonly isolation?: TableDescription["isolation"];
  readonly mode?: TableDescription["mode"];
}

/**
 * A description of table `name` in `form` with the roles `shape` asks for. Advisory keys start
 * with the table's name, as every key the suite takes must (keys belong to the whole database).
 */
export function describeTable(form: ClaimFormName, name: string, shape: TableShape = {}): TableDescription {
  const roles = shape.roles ?? ["attempt", "runAt", "priority"];
  const columns: Record<string, string> = { id: columnNames.id, payload: columnNames.payload };
  for (const role of roles) columns[role] = columnNames[role];
  if (form === "lease") columns.lockedUntil = columnNames.lockedUntil;
  return {
    name,
    columns: columns as unknown as TableDescription["columns"],
    ...(shape.extraColumns === undefined ? {} : { extraColumns: shape.extraColumns }),
    ...(shape.payloadType === undefined ? {} : { payloadType: shape.payloadType }),
    ...(shape.fifo === undefined ? {} : { fifo: shape.fifo }),
    ...(form === "lease" ? { lease: shape.lease ?? 1 } : {}),
    ...(form === "advisory" ? { advisoryLock: `${name}-{${shape.keyColumn ?? columnNames.id}}` } : {}),
    ...(shape.maxAttempts === undefined ? {} : { maxAttempts: shape.maxAttempts }),
    ...(shape.deadLetter === undefined ? {} : { deadLetter: shape.deadLetter }),
    ...(shape.isolation === undefined ? {} : { isolation: shape.isolation }),
    ...(shape.mode === undefined ? {} : { mode: shape.mode }),
  };
}

/** The same description under another name, without dead-lettering of its own: a dead-letter table's description. */
export function deadLetterDescription(description: TableDescription, name: string): TableDescription {
  const { maxAttempts: _cap, deadLetter: _target, advisoryLock, ...rest } = description;
  return {
    ...rest,
    name,
    ...(advisoryLock === undefined
      ? {}
      : {
          advisoryLock:
            typeof advisoryLock === "string"
              ? advisoryLock.replace(description.name, name)
              : { ...advisoryLock, key: advisoryLock.key.replace(description.name, name) },
        }),
  };
}
