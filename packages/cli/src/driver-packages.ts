/**
 * The packages a database needs, and their loading. `rowclaim` declares the drivers and their
 * clients as optional peer dependencies, so that a team installs only its own database's (a
 * PostgreSQL team does not compile better-sqlite3): each is imported only when a command uses
 * its database, and one that is not installed fails with {@link DriverNotInstalledError}, which
 * names the install command.
 *
 * @module
 */
import type { Dialect } from "./target.js";

/** The driver package and client library a dialect needs. */
export interface DriverPackages {
  /** What the database is called in messages. */
  readonly database: string;
  /** The rowclaim driver package. */
  readonly driver: string;
  /** The database client the driver runs on. */
  readonly client: string;
}

/** The packages each dialect needs. */
export const driverPackages: Readonly<Record<Dialect, DriverPackages>> = Object.freeze({
  sqlite: { database: "SQLite", driver: "@rowclaim/sqlite", client: "better-sqlite3" },
  postgres: { database: "PostgreSQL", driver: "@rowclaim/postgres", client: "pg" },
  mysql: { database: "MySQL/MariaDB", driver: "@rowclaim/mysql", client: "mysql2" },
});

/** The command that installs what `dialect` needs. */
export function installCommand(dialect: Dialect): string {
  const { driver, client } = driverPackages[dialect];
  return `npm install ${driver} ${client}`;
}

/** A command needs a database whose driver or client is not installed. Code `DRIVER_NOT_INSTALLED`. */
export class DriverNotInstalledError extends Error {
  /** The stable code. */
  readonly code = "DRIVER_NOT_INSTALLED";
  /** The dialect whose packages are missing. */
  readonly dialect: Dialect;
  /** The command that installs them, e.g. `npm install @rowclaim/postgres pg`. */
  readonly installCommand: string;

  constructor(dialect: Dialect, missing: string, cause: unknown) {
    const { database } = driverPackages[dialect];
    const install = installCommand(dialect);
    super(
      `${database} needs ${missing}, which is not installed. Install the driver and its client beside rowclaim: ${install} (rowclaim leaves them optional so that you install only your own database's).`,
      { cause },
    );
    this.name = "DriverNotInstalledError";
    this.dialect = dialect;
    this.installCommand = install;
  }
}

/**
 * Runs `load` (a dynamic `import()` of `dialect`'s driver or client, or of a module that imports
 * them) and turns a "module not found" for one of the dialect's packages into a
 * {@link DriverNotInstalledError}. Any other failure is rethrown as it is.
 */
export async function loadForDialect<T>(dialect: Dialect, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = missingPackage(error, dialect);
    if (missing !== undefined) throw new DriverNotInstalledError(dialect, missing, error);
    throw error;
  }
}

/** The dialect's package that `error` says could not be found, if it says so. */
function missingPackage(error: unknown, dialect: Dialect): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined;
  const { driver, client } = driverPackages[dialect];
  // Node names the package in quotes: "Cannot find package 'pg' imported from …".
  return [driver, client].find((name) => error.message.includes(`'${name}'`));
}
