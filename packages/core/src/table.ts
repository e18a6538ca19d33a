/**
 * Table descriptions: which columns play which role, which claim form the table takes, and
 * the options of that form. {@link defineTable} validates a description once and returns a
 * frozen {@link TableDefinition} that drivers build their statements from.
 *
 * @module
 */
import { type AdvisoryLockOptions, splitAdvisoryLock } from "./advisory-limit.js";
import { DeclarationError } from "./errors.js";
import { describeValue, type KeySet, unknownKey } from "./option-keys.js";
import type { Headers } from "./rows.js";
import { isStandardSchema, type StandardSchemaV1 } from "./standard-schema.js";

/** The three ways to claim a row. */
export type ClaimFormName = "rowLock" | "lease" | "advisory";

/** How the payload column holds the message body. */
export type PayloadType = "json" | "text" | "bytes";

/** A transaction isolation level a row lock or lease claim may run at (PostgreSQL, MySQL). */
export type IsolationLevel = "read uncommitted" | "read committed" | "repeatable read" | "serializable";

/** A SQLite transaction mode for claims (`BEGIN DEFERRED`, `IMMEDIATE`, `EXCLUSIVE`). */
export type TransactionMode = "deferred" | "immediate" | "exclusive";

/** Every isolation level a description may name. */
export const isolationLevels: readonly IsolationLevel[] = Object.freeze([
  "read uncommitted",
  "read committed",
  "repeatable read",
  "serializable",
]);

/** Every SQLite transaction mode a description may name. */
export const transactionModes: readonly TransactionMode[] = Object.freeze([
  "deferred",
  "immediate",
  "exclusive",
]);

/**
 * The column names that play each role. Names are the user's; roles are fixed. Only `id` and
 * `payload` are required.
 */
export interface TableColumns {
  /** Primary key; claim order's last tie-break. */
  readonly id: string;
  /** The message body: JSON (default), text or bytes, as {@link TableDescription.payloadType} says. */
  readonly payload: string;
  /** The number the next delivery will report; the schema default is 1. */
  readonly attempt?: string;
  /** When the row is due (NULL or past: due now). `retryAfter` writes it. */
  readonly runAt?: string;
  /** Smaller goes first. */
  readonly priority?: string;
  /** The queue name inside the table; with `fifo: true` each group is kept in order. */
  readonly group?: string;
  /** Where present, ack marks the row instead of deleting it. */
  readonly processedAt?: string;
  /** Selects the lease form; holds the lease's expiry, the delivery's token. */
  readonly lockedUntil?: string;
  /** A JSON map carried beside the payload. */
  readonly headers?: string;
  /**
   * Unique jobs: the key a queued row holds (`publish(…, { key })`). A unique index on it keeps
   * at most one queued row per key; the claim writes NULL into it, so a row in work, retried or
   * processed holds no key. Lease and advisory lock forms only (a row lock claim commits nothing
   * the index could see while the handler runs).
   */
  readonly key?: string;
}

/** The role names of {@link TableColumns}. */
export type ColumnRole = keyof TableColumns;

/** Where a dead row goes: another group of the same table, or another table with the same columns. */
export type DeadLetterTarget = { readonly group: string } | { readonly table: string };

/**
 * What a service writes to describe a queue table. Validated by {@link defineTable}.
 *
 * @typeParam Extra the names of {@link TableDescription.extraColumns}; `publish`'s `values` may
 * name only these.
 */
export interface TableDescription<Extra extends string = string> {
  /** The table's name, as the database knows it. Quoted by the driver, never spliced. */
  readonly name: string;
  /** The schema (PostgreSQL) or database (MySQL) the table lives in; the connection's default when absent. */
  readonly schema?: string;
  /** Which column plays which role. */
  readonly columns: TableColumns;
  /**
   * Other columns the table has that advisory keys may name and `publish` may fill
   * (`publish(table, payload, { values: { account: 7 } })`).
   */
  readonly extraColumns?: readonly Extra[];
  /** How the payload column holds the body. Default `"json"`. */
  readonly payloadType?: PayloadType;
  /**
   * A schema in the Standard Schema form (zod, valibot, arktype …) that every payload must
   * pass: `publish` refuses a payload that fails it with `INVALID_ARGUMENT` naming the path, and
   * a claimed row whose payload fails it is dead-lettered (retried where the table has no dead
   * letter) with the issues in the log. The table's payload type is the schema's output type.
   */
  readonly payloadSchema?: StandardSchemaV1;
  /**
   * Selects the advisory lock form: a key template whose `{placeholders}` each name a column,
   * for example `"accounts-{account}"`. Rows whose keys match run one at a time; give
   * `{ key, limit }` ({@link AdvisoryLockOptions}) to let up to `limit` of them run at once.
   */
  readonly advisoryLock?: string | AdvisoryLockOptions;
  /** Keep each group in order: a claim takes only the head of its group, and nothing while a row of it is in work. */
  readonly fifo?: boolean;
  /** The lease, in seconds: whole, at least 1, rounded up. Default 30. Lease form only. */
  readonly lease?: number;
  /** The isolation level of the claim's transaction (PostgreSQL, MySQL). */
  readonly isolation?: IsolationLevel;
  /** The SQLite transaction mode of claims. Default `"immediate"`. */
  readonly mode?: TransactionMode;
  /** After this many failed deliveries the row moves to {@link TableDescription.deadLetter}. Needs `attempt`. */
  readonly maxAttempts?: number;
  /** Where rows go at `maxAttempts`, and on `deadLetter()`. */
  readonly deadLetter?: DeadLetterTarget;
}

/** The keys a table description takes. */
export const tableDescriptionKeys = Object.freeze(
  Object.keys({
    name: true,
    schema: true,
    columns: true,
    extraColumns: true,
    payloadType: true,
    payloadSchema: true,
    advisoryLock: true,
    fifo: true,
    lease: true,
    isolation: true,
    mode: true,
    maxAttempts: true,
    deadLetter: true,
  } satisfies KeySet<TableDescription>),
);

/** One piece of a parsed advisory key template. */
export type KeyPart = { readonly literal: string } | { readonly column: string };

/** A parsed advisory key template: literal text and column references, in order. */
export interface KeyTemplate {
  /** The template as written. */
  readonly source: string;
  /** Its pieces; adjacent literals are merged and empty literals left out. */
  readonly parts: readonly KeyPart[];
}

/**
 * The types a table carries, for the compiler only: no value of this type exists at run time.
 * Each is a method parameter so that a table of any payload type is still a `TableDefinition`
 * (drivers and helpers take tables of every type), while `publish`, `subscribe` and an explicit
 * `subscribe<T>()` are checked against the table's own types.
 */
export interface TableTypes<Payload, Head, Extra extends string, Input> {
  /** The payload a handler receives. */
  payload(value: Payload): void;
  /** The headers map. */
  headers(value: Head): void;
  /** The extra column names `values` may fill. */
  extra(value: Extra): void;
  /** What `publish` takes (the schema's input type; the payload type otherwise). */
  input(value: Input): void;
}

/**
 * A validated, frozen table description. Drivers build every statement from this.
 *
 * @typeParam Payload what handlers receive (`unknown` for a JSON table described without a type).
 * @typeParam Head the headers map.
 * @typeParam Extra the extra column names `publish`'s `values` may fill.
 * @typeParam Input what `publish` takes (differs from `Payload` only with a transforming schema).
 */
export interface TableDefinition<
  Payload = unknown,
  Head = Headers,
  Extra extends string = string,
  Input = Payload,
> {
  /** The table's name. */
  readonly name: string;
  /** The schema or database the table lives in, if named. */
  readonly schema: string | undefined;
  /** The claim form the description selects. */
  readonly form: ClaimFormName;
  /** Which column plays which role. */
  readonly columns: Readonly<TableColumns>;
  /** The other columns named by the description. */
  readonly extraColumns: readonly string[];
  /** Every column the description names: roles (in role order) then extra columns. */
  readonly allColumns: readonly string[];
  /** How the payload column holds the body. */
  readonly payloadType: PayloadType;
  /** The parsed advisory key, for the advisory form. */
  readonly advisoryKey: KeyTemplate | undefined;
  /** How many rows of one rendered key may be in work at once (`advisoryLock.limit`; 1 otherwise). */
  readonly advisoryLimit: number;
  /** Whether each group is kept in order. */
  readonly fifo: boolean;
  /** The lease in whole seconds (lease form; 30 unless set). */
  readonly leaseSeconds: number;
  /** The isolation level the description names, if any. */
  readonly isolation: IsolationLevel | undefined;
  /** The SQLite transaction mode the description names, if any. */
  readonly mode: TransactionMode | undefined;
  /** The attempt cap, if any. */
  readonly maxAttempts: number | undefined;
  /** Where dead rows go, if anywhere. */
  readonly deadLetter: DeadLetterTarget | undefined;
  /** The Standard Schema payloads are checked with, if the description gives one. */
  readonly payloadSchema: StandardSchemaV1 | undefined;
  /** The description as given. */
  readonly description: TableDescription;
  /** Type-only (never set): the types this table carries. See {@link TableTypes}. */
  readonly "~types"?: TableTypes<Payload, Head, Extra, Input> | undefined;
}

/** The payload type of a table. */
export type PayloadOf<Table> =
  Table extends TableDefinition<infer Payload, infer _H, infer _E, infer _I> ? Payload : never;

/**
 * What `publish` takes for a table: its input type. A JSON table described without a type
 * takes `unknown`, as before tables were typed (the run-time check refuses what JSON cannot hold
 * unchanged); type the table, or give it a `payloadSchema`, to have payloads checked by the
 * compiler. {@link JsonInput} is the type to use for a table of plain JSON values.
 */
export type PublishPayloadOf<Table> =
  Table extends TableDefinition<infer _P, infer _H, infer _E, infer Input> ? Input : never;

/** The headers type of a table. */
export type HeadersOf<Table> =
  Table extends TableDefinition<infer _P, infer Head, infer _E, infer _I> ? Head : never;

/** The extra column names of a table. */
export type ExtraColumnsOf<Table> =
  Table extends TableDefinition<infer _P, infer _H, infer Extra, infer _I> ? Extra : never;

/**
 * What an untyped JSON table takes at compile time: a string, number, boolean, `null`, an array
 * or an object; never a function, `undefined`, a symbol or a bigint. (`publish` also refuses at
 * run time what JSON would change: `NaN`, `Infinity`, a `Map`, a `Set`, an `undefined` inside.)
 */
export type JsonInput =
  | string
  | number
  | boolean
  | null
  | (object & { readonly call?: never; readonly apply?: never; readonly bind?: never })
  | { readonly [key: string]: unknown };

/** The payload type a description gives: its schema's output, `string` for text, `Uint8Array` for bytes. */
export type DescribedPayload<D> = D extends {
  readonly payloadSchema: StandardSchemaV1<infer _I, infer Output>;
}
  ? Output
  : D extends { readonly payloadType: "text" }
    ? string
    : D extends { readonly payloadType: "bytes" }
      ? Uint8Array
      : unknown;

/** What `publish` takes for a description: its schema's input, or the payload type. */
export type DescribedInput<D> = D extends { readonly payloadSchema: StandardSchemaV1<infer Input, infer _O> }
  ? Input
  : DescribedPayload<D>;

/** The extra column names a description lists. */
export type DescribedExtra<D> = "extraColumns" extends keyof D
  ? D extends { readonly extraColumns?: readonly (infer Extra extends string)[] | undefined }
    ? Extra
    : string
  : never;

const roleOrder: readonly ColumnRole[] = [
  "id",
  "payload",
  "attempt",
  "runAt",
  "priority",
  "group",
  "processedAt",
  "lockedUntil",
  "headers",
  "key",
];

/** The default lease, in seconds. */
export const DEFAULT_LEASE_SECONDS = 30;

/**
 * The longest lease a description may set, in seconds: 4,294,967 s (about 49.7 days). The
 * subscription extends every lease each half lease with a Node timer, and Node's timers hold at
 * most 2^31 − 1 ms (a longer interval is clamped to 1 ms, which would extend leases in a busy
 * loop); half of this lease, in milliseconds, is the largest whole-second value that fits. Every
 * column type the drivers accept for `lockedUntil` holds now + this lease exactly (PostgreSQL
 * `timestamptz` to the year 294276, MySQL `DATETIME` to 9999 and `TIMESTAMP` to 2038-01-19,
 * SQLite epoch milliseconds), and a JavaScript `Date` holds it too.
 */
export const MAX_LEASE_SECONDS = Math.floor((2 ** 31 - 1) / 500);

/**
 * Validates a table description and returns its frozen definition.
 *
 * @throws {DeclarationError} when the description cannot work: both `lockedUntil` and
 * `advisoryLock`; a key placeholder naming no column; `fifo` beside `advisoryLock`; `fifo` or a
 * dead-letter group without a `group` column; `maxAttempts` without `deadLetter`, the reverse,
 * or either without an `attempt` column; a lease under one second; an unknown isolation level
 * or mode; a column named for two roles; a key column in the row lock form.
 *
 * The table carries its types to `publish` and `subscribe`: give the payload type as a type
 * argument (`defineTable<Email>({ … })`, with the headers type and the extra column names as
 * further arguments), or give a `payloadSchema` and the types are inferred from it. Without
 * either, a JSON table takes any JSON value and hands handlers `unknown`.
 *
 * @example
 * interface Email { to: string }
 * const jobs = defineTable<Email>({
 *   name: "jobs",
 *   columns: { id: "id", payload: "payload", attempt: "attempt", runAt: "run_at", lockedUntil: "locked_until" },
 *   lease: 10,
 * });
 */
export function defineTable<const D extends TableDescription>(
  description: D,
): TableDefinition<DescribedPayload<D>, Headers, DescribedExtra<D>, DescribedInput<D>>;
/**
 * Validates a table description whose payload type (and headers type, and extra column names)
 * are given as type arguments, and returns its frozen definition.
 *
 * @example
 * const emails = defineTable<Email, Headers, "account">({ name: "emails", columns, extraColumns: ["account"] });
 */
export function defineTable<Payload, Head extends Headers = Headers, Extra extends string = never>(
  description: TableDescription<NoInfer<Extra>>,
): TableDefinition<Payload, Head, Extra>;
export function defineTable(description: TableDescription): TableDefinition {
  if (typeof description !== "object" || description === null) {
    throw new DeclarationError(
      "defineTable() needs a description object: { name, columns: { id, payload } }.",
    );
  }
  const name = description.name;
  if (typeof name !== "string" || name.length === 0) {
    throw new DeclarationError("A table description needs a non-empty `name`.");
  }
  const fail = (problem: string, fix: string): never => {
    throw new DeclarationError(`Table "${name}": ${problem}. ${fix}`, { table: name });
  };
  const unknown = unknownKey(description, tableDescriptionKeys);
  if (unknown !== undefined) fail(`the description has an unknown key \`${unknown.key}\``, unknown.advice);
  if (
    description.schema !== undefined &&
    (typeof description.schema !== "string" || description.schema === "")
  ) {
    fail("`schema` must be a non-empty string", "Leave it out to use the connection's default schema.");
  }
  const columns = description.columns;
  if (typeof columns !== "object" || columns === null) {
    fail(
      "the description has no `columns`",
      'Name at least the id and payload columns: columns: { id: "id", payload: "payload" }.',
    );
  }
  const roleColumns: Partial<Record<ColumnRole, string>> = {};
  const owner = new Map<string, string>();
  for (const role of Object.keys(columns) as ColumnRole[]) {
    if (!roleOrder.includes(role)) {
      fail(
        `\`columns.${role}\` is not a column role`,
        `The roles are ${roleOrder.join(", ")}; list other columns in \`extraColumns\`.`,
      );
    }
  }
  for (const role of roleOrder) {
    const column = columns[role];
    if (column === undefined) continue;
    if (typeof column !== "string" || column.length === 0) {
      fail(
        `\`columns.${role}\` must be a non-empty column name`,
        "Give the column's name as a string, or leave the role out.",
      );
    }
    const other = owner.get(column);
    if (other !== undefined) {
      fail(
        `column "${column}" is named for both ${other} and ${role}`,
        "Give each role a column of its own.",
      );
    }
    owner.set(column, role);
    roleColumns[role] = column;
  }
  if (roleColumns.id === undefined) fail("`columns.id` is missing", "Name the primary key column.");
  if (roleColumns.payload === undefined)
    fail("`columns.payload` is missing", "Name the column that holds the message body.");

  const extraColumns = [...(description.extraColumns ?? [])];
  for (const column of extraColumns) {
    if (typeof column !== "string" || column.length === 0) {
      fail("`extraColumns` must list non-empty column names", "Remove the empty entry.");
    }
    if (owner.has(column)) {
      fail(
        `column "${column}" is listed in extraColumns and also plays the ${owner.get(column)} role`,
        "List it once.",
      );
    }
    owner.set(column, "extra");
  }

  const payloadType = description.payloadType ?? "json";
  if (!["json", "text", "bytes"].includes(payloadType)) {
    fail(`payloadType "${String(payloadType)}" is unknown`, 'Use "json", "text" or "bytes".');
  }

  const hasLease = roleColumns.lockedUntil !== undefined;
  const hasAdvisory = description.advisoryLock !== undefined;
  if (hasLease && hasAdvisory) {
    fail(
      "it names both a lockedUntil column (lease form) and advisoryLock (advisory lock form)",
      "A table takes one claim form: remove columns.lockedUntil or advisoryLock.",
    );
  }
  const form: ClaimFormName = hasLease ? "lease" : hasAdvisory ? "advisory" : "rowLock";
  if (roleColumns.key !== undefined && form === "rowLock") {
    fail(
      "columns.key is named in the row lock form",
      "Unique keys need a claim that commits before the handler runs: name columns.lockedUntil (lease form) or set advisoryLock. A row lock claim holds its rows in an open transaction, so a publish of the key would have to wait for the handler.",
    );
  }

  let advisoryKey: KeyTemplate | undefined;
  let advisoryLimit = 1;
  if (hasAdvisory) {
    const split = splitAdvisoryLock(description.advisoryLock, fail);
    advisoryKey = parseKeyTemplate(split.template, owner, fail);
    advisoryLimit = split.limit;
  }

  const fifo = description.fifo ?? false;
  if (typeof fifo !== "boolean")
    fail("`fifo` must be true or false", "Set fifo: true to keep each group in order.");
  if (fifo && hasAdvisory) {
    fail(
      "fifo is set beside advisoryLock",
      'The advisory lock form already runs rows with one key one at a time: put the group column into the key instead (advisoryLock: "{queue}").',
    );
  }
  if (fifo && roleColumns.group === undefined) {
    fail("fifo is set but the table has no group column", "Name columns.group: each group is kept in order.");
  }

  let leaseSeconds = DEFAULT_LEASE_SECONDS;
  if (description.lease !== undefined) {
    if (!hasLease) {
      fail(
        "`lease` is set but the table has no lockedUntil column",
        "Name columns.lockedUntil to take the lease form, or remove `lease`.",
      );
    }
    const lease = description.lease;
    if (typeof lease !== "number" || !Number.isFinite(lease)) {
      fail(
        `\`lease\` must be a number of seconds, got ${describeValue(lease)}`,
        "Set lease to a whole number of seconds, at least 1.",
      );
    }
    if (lease < 1) fail(`the lease of ${lease} s is under one second`, "Set lease to at least 1 (seconds).");
    if (Math.ceil(lease) > MAX_LEASE_SECONDS) {
      fail(
        `the lease of ${lease} s is longer than the longest lease, ${MAX_LEASE_SECONDS} s (about 49 days)`,
        `Set lease to at most ${MAX_LEASE_SECONDS}: the subscription extends each lease every half lease with a timer, and Node's timers hold at most 2^31 − 1 ms. A handler may run longer than its lease anyway, since the lease is extended while it runs.`,
      );
    }
    leaseSeconds = Math.ceil(lease);
  }

  if (description.isolation !== undefined && !isolationLevels.includes(description.isolation)) {
    fail(
      `isolation "${String(description.isolation)}" is unknown`,
      `Use one of ${isolationLevels.join(", ")}.`,
    );
  }
  if (description.mode !== undefined && !transactionModes.includes(description.mode)) {
    fail(`mode "${String(description.mode)}" is unknown`, `Use one of ${transactionModes.join(", ")}.`);
  }

  const payloadSchema = description.payloadSchema;
  if (payloadSchema !== undefined && !isStandardSchema(payloadSchema)) {
    fail(
      "`payloadSchema` is not a Standard Schema (version 1)",
      "Give a zod, valibot or arktype schema, or any object with a `~standard` property of version 1.",
    );
  }

  const retirement = validateRetirement(
    { maxAttempts: description.maxAttempts, deadLetter: description.deadLetter },
    roleColumns,
    fail,
  );

  const allColumns = [
    ...roleOrder.flatMap((role) => (roleColumns[role] === undefined ? [] : [roleColumns[role]])),
    ...extraColumns,
  ];

  return Object.freeze({
    name,
    schema: description.schema,
    form,
    columns: Object.freeze({ ...(roleColumns as TableColumns) }),
    extraColumns: Object.freeze(extraColumns),
    allColumns: Object.freeze(allColumns),
    payloadType,
    advisoryKey,
    advisoryLimit,
    fifo,
    leaseSeconds,
    isolation: description.isolation,
    mode: description.mode,
    maxAttempts: retirement.maxAttempts,
    deadLetter: retirement.deadLetter,
    payloadSchema,
    description,
  });
}

/**
 * Checks a `maxAttempts` / `deadLetter` pair (from a description or a subscription's options)
 * against the table's columns.
 *
 * @internal used by {@link defineTable} and the broker's `subscribe`.
 */
export function validateRetirement(
  options: { maxAttempts: number | undefined; deadLetter: DeadLetterTarget | undefined },
  columns: Partial<Record<ColumnRole, string>>,
  fail: (problem: string, fix: string) => never,
): { maxAttempts: number | undefined; deadLetter: DeadLetterTarget | undefined } {
  const { maxAttempts, deadLetter } = options;
  if (maxAttempts !== undefined) {
    if (typeof maxAttempts !== "number" || !Number.isInteger(maxAttempts) || maxAttempts < 1) {
      fail(
        `maxAttempts ${String(maxAttempts)} is not a whole number of at least 1`,
        "Set maxAttempts to 1 or more.",
      );
    }
    if (deadLetter === undefined) {
      fail(
        "maxAttempts is set without deadLetter",
        "Say where rows go at the cap: deadLetter: { group } or { table }.",
      );
    }
    if (columns.attempt === undefined) {
      fail(
        "maxAttempts is set but the table has no attempt column",
        "Name columns.attempt so attempts can be counted.",
      );
    }
  }
  if (deadLetter !== undefined) {
    if (maxAttempts === undefined) {
      fail(
        "deadLetter is set without maxAttempts",
        "Set maxAttempts: the number of deliveries before a row moves out.",
      );
    }
    if (typeof deadLetter !== "object" || deadLetter === null) {
      fail("deadLetter must be { group } or { table }", 'For example deadLetter: { group: "dead" }.');
    }
    const hasGroup = "group" in deadLetter;
    const hasTable = "table" in deadLetter;
    if (hasGroup === hasTable) {
      fail(
        "deadLetter must name exactly one of group or table",
        'For example deadLetter: { group: "dead" } or { table: "jobs_dead" }.',
      );
    }
    if (hasGroup) {
      if (typeof deadLetter.group !== "string" || deadLetter.group === "")
        fail("deadLetter.group must be a non-empty string", "Name the group.");
      if (columns.group === undefined) {
        fail(
          "deadLetter names a group but the table has no group column",
          "Name columns.group, or dead-letter to a table instead.",
        );
      }
    } else if (typeof deadLetter.table !== "string" || deadLetter.table === "") {
      fail(
        "deadLetter.table must be a non-empty table name",
        "Name the table, which must have the same columns.",
      );
    }
  }
  return { maxAttempts, deadLetter: deadLetter === undefined ? undefined : Object.freeze({ ...deadLetter }) };
}

function parseKeyTemplate(
  source: unknown,
  columns: ReadonlyMap<string, string>,
  fail: (problem: string, fix: string) => never,
): KeyTemplate {
  if (typeof source !== "string" || source === "") {
    return fail(
      "advisoryLock must be a non-empty key template",
      'For example advisoryLock: "accounts-{account}".',
    );
  }
  const parts: KeyPart[] = [];
  let literal = "";
  let i = 0;
  while (i < source.length) {
    const ch = source[i];
    if (ch === "{") {
      const close = source.indexOf("}", i + 1);
      if (close === -1)
        fail(`advisoryLock "${source}" has a "{" that is never closed`, "Close every placeholder with }.");
      const column = source.slice(i + 1, close);
      if (column === "" || column.includes("{")) {
        fail(
          `advisoryLock "${source}" has an empty or nested placeholder`,
          "Write {column} with the name of a column.",
        );
      }
      if (!columns.has(column)) {
        fail(
          `advisoryLock placeholder {${column}} names no column of the table`,
          `Name a described column or list "${column}" in extraColumns.`,
        );
      }
      if (literal !== "") parts.push({ literal });
      literal = "";
      parts.push({ column });
      i = close + 1;
    } else if (ch === "}") {
      fail(`advisoryLock "${source}" has a "}" with no "{"`, "Placeholders are written {column}.");
    } else {
      literal += ch;
      i += 1;
    }
  }
  if (literal !== "") parts.push({ literal });
  return Object.freeze({ source, parts: Object.freeze(parts) });
}
