/**
 * The database `demo` and `bench` run on (a temporary SQLite file when no `--url` is given): its
 * `--url` flag, a driver, the command line's own connection for DDL, and recreating tables.
 * Publishing and draining are in `publish-drain.ts`.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Driver, TableDefinition } from "@rowclaim/core";
import { type AdminConnection, openAdminConnection } from "./admin-connection.js";
import { dropTableSql } from "./admin-sql.js";
import type { FlagSpec } from "./args.js";
import { createDriver } from "./connect.js";
import { parseTarget, type Target } from "./target.js";

/** The `--url` flag of a command that runs on a temporary SQLite file unless given a database. */
export const sessionUrlFlag: FlagSpec = Object.freeze({
  type: "string",
  value: "URL",
  defaultText: "a temporary SQLite file",
  description: "The database: postgres://…, mysql://…, mariadb://…, sqlite:FILE or a file path.",
});

/** The database a run uses, and how to give it back. */
export interface DatabaseSession {
  /** The database. */
  readonly target: Target;
  /** Whether the SQLite file is a temporary one this run made. */
  readonly temporary: boolean;
  /** The driver for the broker; the broker closes it (`broker.close()`). */
  readonly driver: Driver;
  /** The command line's own connection, for DDL and counts. */
  readonly admin: AdminConnection;
  /** Closes the command line's connection and removes a temporary file (unless `keep`). */
  close(options?: { keep?: boolean }): Promise<void>;
}

/**
 * Opens the database of `url`, or a new SQLite file in a temporary directory when `url` is
 * undefined.
 */
export async function openDatabaseSession(
  url: string | undefined,
  command: string,
  poolSize: number,
): Promise<DatabaseSession> {
  let directory: string | undefined;
  let target: Target;
  if (url === undefined) {
    directory = mkdtempSync(join(tmpdir(), `rowclaim-${command}-`));
    target = { dialect: "sqlite", filename: join(directory, `${command}.db`) };
  } else {
    target = parseTarget(url, command);
  }
  const removeDirectory = (): void => {
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  };
  let admin: AdminConnection | undefined;
  try {
    // The command line's connection first: on SQLite it creates the file in WAL mode before the driver opens it.
    admin = await openAdminConnection(target);
    const driver = await createDriver(target, { poolSize });
    const opened = admin;
    return {
      target,
      temporary: directory !== undefined,
      driver,
      admin: opened,
      async close(options = {}) {
        await opened.close();
        if (options.keep !== true) removeDirectory();
      },
    };
  } catch (error) {
    await admin?.close().catch(() => undefined);
    removeDirectory();
    throw error;
  }
}

/** Drops `names` where they exist, then creates `tables` with the driver's recommended DDL. */
export async function recreateTables(
  session: DatabaseSession,
  names: readonly string[],
  tables: readonly TableDefinition[],
): Promise<void> {
  for (const name of names) await session.admin.execute(dropTableSql(session.target.dialect, name));
  for (const table of tables) await session.admin.execute(session.driver.schemaSql(table));
}
