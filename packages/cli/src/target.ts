/**
 * Which database a `--url` names: no URL, `sqlite:` or a file path is SQLite; `postgres://` or
 * `postgresql://` is PostgreSQL; `mysql://` or `mariadb://` is MySQL/MariaDB.
 *
 * @module
 */
import { UsageError } from "./args.js";

/** The SQL dialects the command line speaks. */
export type Dialect = "sqlite" | "postgres" | "mysql";

/** Every dialect, in the order `--help` lists them. */
export const dialects: readonly Dialect[] = Object.freeze(["sqlite", "postgres", "mysql"]);

/** A database to connect to. */
export type Target =
  | { readonly dialect: "sqlite"; readonly filename: string }
  | { readonly dialect: "postgres"; readonly url: string }
  | { readonly dialect: "mysql"; readonly url: string };

/**
 * Reads a `--url` value.
 *
 * - `postgres://…`, `postgresql://…` → PostgreSQL (the URL as given);
 * - `mysql://…` → MySQL/MariaDB; `mariadb://…` → the same, rewritten to `mysql://` for mysql2;
 * - `sqlite:PATH`, `sqlite://PATH`, `sqlite:///ABSOLUTE`, `sqlite::memory:` → SQLite at PATH;
 * - anything without a `scheme://` (a file path) → SQLite at that path.
 *
 * @throws {UsageError} for another scheme, or `sqlite:` without a path.
 */
export function parseTarget(url: string, command?: string): Target {
  const lower = url.toLowerCase();
  if (lower.startsWith("postgres://") || lower.startsWith("postgresql://"))
    return { dialect: "postgres", url };
  if (lower.startsWith("mysql://")) return { dialect: "mysql", url };
  if (lower.startsWith("mariadb://"))
    return { dialect: "mysql", url: `mysql://${url.slice("mariadb://".length)}` };
  if (lower.startsWith("sqlite:")) {
    let rest = url.slice("sqlite:".length);
    if (rest.startsWith("//")) rest = rest.slice(2);
    const query = rest.indexOf("?");
    if (query !== -1) rest = rest.slice(0, query);
    if (rest === "")
      throw new UsageError(
        `--url ${url} names no SQLite file: write sqlite:./jobs.db or a file path.`,
        command,
      );
    return { dialect: "sqlite", filename: decodeURIComponent(rest) };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  if (scheme !== null) {
    throw new UsageError(
      `--url ${scheme[1]}://… is not a database rowclaim knows. Use postgres://, postgresql://, mysql://, mariadb://, sqlite: or a file path.`,
      command,
    );
  }
  return { dialect: "sqlite", filename: url };
}

/** A URL for people: the password, if any, replaced by `***`. */
export function describeTarget(target: Target): string {
  if (target.dialect === "sqlite") return `SQLite file ${target.filename}`;
  const name = target.dialect === "postgres" ? "PostgreSQL" : "MySQL/MariaDB";
  try {
    const parsed = new URL(target.url);
    if (parsed.password !== "") parsed.password = "***";
    return `${name} at ${parsed.toString()}`;
  } catch {
    return name;
  }
}
