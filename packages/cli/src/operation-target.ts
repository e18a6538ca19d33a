/**
 * What the operations commands (`cancel`, `redrive`, `prune`) share: the one table they act on
 * (from the config module, or the standard layout's flags), a driver on its database, the ids
 * and durations they take, and the progress lines they print on long runs.
 *
 * @module
 */
import type { Driver, OperationProgress, RowId, TableDefinition } from "@rowclaim/core";
import { type FlagSpec, type ParsedFlags, stringFlag, UsageError } from "./args.js";
import { tableFromFlags, tableShapeFlags } from "./commands/schema.js";
import { createDriver } from "./connect.js";
import type { ProgressStream } from "./progress.js";
import { configFlag, tablesFor, urlFor } from "./table-source.js";
import { standardTable } from "./tables.js";
import { parseTarget } from "./target.js";

/** The flags every operations command takes: the database, the config, and the table. */
export const operationFlags: Readonly<Record<string, FlagSpec>> = Object.freeze({
  url: {
    type: "string",
    value: "URL",
    defaultText: "the config's url",
    description: "The database: postgres://…, mysql://…, sqlite:FILE or a file path.",
  },
  config: configFlag,
  ...tableShapeFlags,
  table: {
    type: "string",
    value: "NAME",
    description:
      "The table to act on (with a config module: one of its tables; needed when it lists several).",
  },
});

/** The one table a command acts on, and a driver on its database (the caller closes it). */
export interface OperationTarget {
  readonly table: TableDefinition;
  readonly driver: Driver;
}

/**
 * Finds the table (`--table`, from the config module or described by the shape flags;
 * `deadLetterGroup` adds a dead-letter group to a standard-layout table) and opens a driver.
 *
 * @throws {UsageError} when no single table is named, or the database is not given.
 */
export async function operationTarget(
  flags: ParsedFlags,
  command: string,
  deadLetterGroup?: string,
): Promise<OperationTarget> {
  const source = await tablesFor(flags, command, (given, name) => {
    const table = tableFromFlags(given, name);
    if (deadLetterGroup === undefined) return table;
    return standardTable({
      name: table.name,
      form: table.form,
      payloadType: table.payloadType,
      processedAt: table.columns.processedAt !== undefined,
      headers: table.columns.headers !== undefined,
      ...(table.advisoryKey === undefined ? {} : { key: table.advisoryKey.source }),
      maxAttempts: 1,
      deadLetterGroup,
    });
  });
  if (source.config !== undefined && deadLetterGroup !== undefined)
    throw new UsageError(
      `--dead-letter-group names the standard layout's dead letter; ${source.config.file} describes the table's own.`,
      command,
    );
  const [table, ...others] = source.tables;
  if (table === undefined || others.length > 0)
    throw new UsageError(
      `${command} acts on one table: name it with --table (${source.tables.map((t) => t.name).join(", ")}).`,
      command,
    );
  const target = parseTarget(urlFor(flags, source, command), command);
  return { table, driver: await createDriver(target, { poolSize: 2 }) };
}

/** Row ids as the command line gives them: whole numbers become numbers, anything else stays text. */
export function parseIds(values: readonly string[]): RowId[] {
  return values.map((value) =>
    /^\d+$/.test(value) && Number.isSafeInteger(Number(value)) ? Number(value) : value,
  );
}

const units: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * A duration in milliseconds from `30s`, `15m`, `12h`, `7d`, `2w`, `500ms` or plain
 * milliseconds.
 *
 * @throws {UsageError} for anything else (a negative period included).
 */
export function parseDuration(text: string, flag: string, command: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(text.trim());
  if (match === null)
    throw new UsageError(`--${flag} ${text}: give a duration such as 30s, 15m, 12h, 7d or 2w.`, command);
  return Math.round(Number(match[1]) * (units[match[2] ?? "ms"] ?? 1));
}

/**
 * Progress of a long run on stderr: a line at most every `intervalMs` (and none for a run that
 * ends first). Returns the `onProgress` callback.
 */
export function progressReporter(
  stream: ProgressStream,
  label: string,
  intervalMs = 1000,
  now: () => number = Date.now,
): (progress: OperationProgress) => void {
  let last = now();
  return (progress) => {
    const at = now();
    if (at - last < intervalMs) return;
    last = at;
    const total = progress.total === undefined ? "" : `/${progress.total}`;
    stream.write(`${label}: ${progress.done}${total} rows, ${progress.batches} batches so far\n`);
  };
}

/** `--batch-size`, as every operations command takes it. */
export const batchSizeFlag: FlagSpec = Object.freeze({
  type: "integer",
  value: "N",
  min: 1,
  max: 10_000,
  defaultText: "500",
  description: "Rows per batch: each batch is one short transaction.",
});

/** The `--id` flag. */
export const idFlag: FlagSpec = Object.freeze({
  type: "string",
  value: "ID",
  multiple: true,
  description: "A row's id (repeat the flag, or separate ids with commas).",
});

/** Reads a string flag that must be present. */
export function requiredString(flags: ParsedFlags, name: string, command: string): string {
  const value = stringFlag(flags, name);
  if (value === undefined) throw new UsageError(`${command} needs --${name}.`, command);
  return value;
}
