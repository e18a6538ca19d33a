/**
 * The config module: a file that exports the database and the user's own table descriptions,
 * so that `schema`, `check` and `status` work on the tables as the service describes them
 * (its names, columns and forms) instead of the command line's standard layout.
 *
 * ```js
 * // rowclaim.config.mjs
 * import { defineTable } from "@rowclaim/core";
 * export default {
 *   url: process.env.DATABASE_URL,
 *   tables: [defineTable({ name: "jobs", columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" } })],
 * };
 * ```
 *
 * `--config FILE` names it; without the flag, the first of {@link CONFIG_FILE_NAMES} in the
 * current directory is used, if any. TypeScript files load where Node runs them (Node 22.6+ with
 * type stripping, or a loader such as tsx); on Node 20 write the config as `.mjs` or `.js`.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { defineTable, type TableDefinition, type TableDescription } from "@rowclaim/core";
import { UsageError } from "./args.js";

/** The file names looked for in the current directory, in this order. */
export const CONFIG_FILE_NAMES: readonly string[] = Object.freeze([
  "rowclaim.config.mjs",
  "rowclaim.config.js",
  "rowclaim.config.cjs",
  "rowclaim.config.mts",
  "rowclaim.config.ts",
]);

/** What a config module exports (as `default`, or as the module's named exports). */
export interface RowclaimConfig {
  /** The database: `postgres://…`, `mysql://…`, `sqlite:FILE` or a file path. `--url` overrides it. */
  readonly url?: string;
  /** The tables, as `defineTable` returns them or as the descriptions it takes. */
  readonly tables: readonly (TableDefinition | TableDescription)[];
}

/** A loaded config: where it came from, its database and its tables. */
export interface LoadedConfig {
  /** The file it was read from. */
  readonly file: string;
  readonly url: string | undefined;
  readonly tables: readonly TableDefinition[];
}

/** A config file that cannot be used: missing, failing to load, or of the wrong shape. Exit code 1. */
export class ConfigError extends Error {
  /** A stable code: `CONFIG`. */
  readonly code = "CONFIG";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConfigError";
  }
}

/**
 * Finds the config: `explicit` (the `--config` flag) or the first default file in `cwd`; `undefined`
 * when neither names one.
 *
 * @throws {ConfigError} when `explicit` names no file.
 */
export function findConfig(explicit: string | undefined, cwd: string = process.cwd()): string | undefined {
  if (explicit !== undefined) {
    const file = resolve(cwd, explicit);
    if (!existsSync(file)) throw new ConfigError(`--config ${explicit}: no such file (looked at ${file}).`);
    return file;
  }
  return CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((file) => existsSync(file));
}

/**
 * Loads the config module `file` and checks its shape. Plain table descriptions go through
 * `defineTable`, so a description that cannot work fails here with core's `DECLARATION` error.
 *
 * @throws {ConfigError} when the module fails to load or exports no tables.
 */
export async function loadConfig(file: string): Promise<LoadedConfig> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const hint =
      code === "ERR_UNKNOWN_FILE_EXTENSION"
        ? " This Node cannot load TypeScript: write the config as .mjs, or run the command line under Node 22.6+ or a TypeScript loader."
        : "";
    throw new ConfigError(`${file} failed to load: ${(error as Error).message}.${hint}`, { cause: error });
  }
  const exported = (isRecord(loaded.default) ? loaded.default : loaded) as Partial<RowclaimConfig>;
  if (exported.url !== undefined && typeof exported.url !== "string")
    throw new ConfigError(`${file}: url must be a string (postgres://…, mysql://…, sqlite:FILE).`);
  if (!Array.isArray(exported.tables) || exported.tables.length === 0)
    throw new ConfigError(
      `${file} exports no tables: export { tables: [defineTable({ … })] } (as default or by name).`,
    );
  const tables = exported.tables.map((entry: unknown, index: number) => {
    if (!isRecord(entry) || typeof entry.name !== "string")
      throw new ConfigError(`${file}: tables[${index}] is not a table description or definition.`);
    return Array.isArray(entry.allColumns)
      ? (entry as unknown as TableDefinition)
      : defineTable(entry as unknown as TableDescription);
  });
  const names = new Set<string>();
  for (const table of tables) {
    if (names.has(table.name)) throw new ConfigError(`${file}: table ${table.name} is listed twice.`);
    names.add(table.name);
  }
  return { file, url: exported.url, tables };
}

/**
 * The config's tables that `names` (the `--table` flags) pick: every table when none is named.
 *
 * @throws {UsageError} for a name the config does not hold.
 */
export function pickTables(
  config: LoadedConfig,
  names: readonly string[],
  command: string,
): readonly TableDefinition[] {
  if (names.length === 0) return config.tables;
  return names.map((name) => {
    const table = config.tables.find((candidate) => candidate.name === name);
    if (table === undefined) {
      const known = config.tables.map((candidate) => candidate.name).join(", ");
      throw new UsageError(`--table ${name} is not in ${config.file} (it holds ${known}).`, command);
    }
    return table;
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
