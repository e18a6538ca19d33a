/**
 * Where a command's tables and database come from: the config module (the user's own table
 * descriptions, see `config.ts`) when there is one, else the shape flags (`--table`, `--form`,
 * `--key`, …) that describe a table in the command line's standard layout.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import { type ParsedFlags, stringFlag, UsageError } from "./args.js";
import { findConfig, type LoadedConfig, loadConfig, pickTables } from "./config.js";

/** The shape flags, which describe a table only when no config module does. */
const shapeFlags = ["form", "key", "payload-type", "processed-at", "headers"] as const;

/** A command's tables, and the config they came from (if any). */
export interface TableSource {
  readonly config: LoadedConfig | undefined;
  readonly tables: readonly TableDefinition[];
}

/**
 * Reads the config module (`--config FILE`, or a default file in the current directory) and picks
 * its tables by `--table`, or, without a config, describes the one `--table` with the shape flags
 * (`fromFlags`).
 *
 * @throws {UsageError} for shape flags beside a config, a `--table` the config lacks, or no `--table` without a config.
 * @throws {ConfigError} when the config cannot be loaded.
 */
export async function tablesFor(
  flags: ParsedFlags,
  command: string,
  fromFlags: (flags: ParsedFlags, command: string) => TableDefinition,
): Promise<TableSource> {
  const file = findConfig(stringFlag(flags, "config"));
  const named = stringFlag(flags, "table");
  if (file === undefined) {
    if (named === undefined)
      throw new UsageError(
        `${command} needs --table NAME, or a config module (--config FILE, or rowclaim.config.mjs here) that lists the tables.`,
        command,
      );
    return { config: undefined, tables: [fromFlags(flags, command)] };
  }
  const given = shapeFlags.filter((flag) => flags.values[flag] !== undefined);
  if (given.length > 0)
    throw new UsageError(
      `--${given.join(", --")} describe a table in the standard layout; ${file} describes the tables. Leave the flag out (or pass --config of another file).`,
      command,
    );
  const config = await loadConfig(file);
  return { config, tables: pickTables(config, named === undefined ? [] : [named], command) };
}

/**
 * The database URL: `--url`, else the config's `url`.
 *
 * @throws {UsageError} when neither gives one.
 */
export function urlFor(flags: ParsedFlags, source: TableSource, command: string): string {
  const url = stringFlag(flags, "url") ?? source.config?.url;
  if (url === undefined)
    throw new UsageError(
      source.config === undefined
        ? `${command} needs --url URL.`
        : `${command} needs --url URL, or a url in ${source.config.file}.`,
      command,
    );
  return url;
}

/** The `--url` flag beside `--config`, shared by the commands that read tables. */
export const urlFlag = Object.freeze({
  type: "string",
  value: "URL",
  defaultText: "the config's url",
  description: "The database: postgres://…, mysql://…, sqlite:FILE or a file path.",
} as const);

/** The `--config` flag, shared by the commands that read tables. */
export const configFlag = Object.freeze({
  type: "string",
  value: "FILE",
  defaultText: "rowclaim.config.mjs (.js, .cjs, .mts, .ts) here, if any",
  description:
    "A config module exporting { url, tables }: the commands then work on your own table descriptions.",
} as const);
