/**
 * Makes the driver a {@link Target} needs: SQLite, PostgreSQL or MySQL/MariaDB. Each driver
 * package is loaded only when its database is used; one that is not installed fails with
 * `DRIVER_NOT_INSTALLED` and the install command.
 *
 * @module
 */
import type { Driver } from "@rowclaim/core";
import { loadForDialect } from "./driver-packages.js";
import type { Target } from "./target.js";

/** How a driver is made. */
export interface DriverOptions {
  /**
   * The connections the driver's pool may open (PostgreSQL, MySQL). The row lock and advisory
   * forms hold one per delivery in work, so size it for every subscription's workers.
   */
  readonly poolSize?: number;
}

/** Creates the driver for `target`. The caller closes it (through `broker.close()`). */
export async function createDriver(target: Target, options: DriverOptions = {}): Promise<Driver> {
  switch (target.dialect) {
    case "sqlite": {
      const { createSqliteDriver } = await loadForDialect("sqlite", () => import("@rowclaim/sqlite"));
      return createSqliteDriver({ filename: target.filename });
    }
    case "postgres": {
      const { createPostgresDriver } = await loadForDialect("postgres", () => import("@rowclaim/postgres"));
      return createPostgresDriver({
        url: target.url,
        ...(options.poolSize === undefined ? {} : { max: options.poolSize }),
      });
    }
    case "mysql": {
      const { createMysqlDriver } = await loadForDialect("mysql", () => import("@rowclaim/mysql"));
      return createMysqlDriver({
        url: target.url,
        ...(options.poolSize === undefined ? {} : { connectionLimit: options.poolSize }),
      });
    }
  }
}

/**
 * Runs `use` with a driver of `dialect` that never connects (for `schemaSql`), then closes it.
 * SQLite opens an in-memory database; PostgreSQL and MySQL pools connect only on first use.
 */
export async function schemaDriver<T>(dialect: Target["dialect"], use: (driver: Driver) => T): Promise<T> {
  const target: Target =
    dialect === "sqlite"
      ? { dialect, filename: ":memory:" }
      : { dialect, url: dialect === "postgres" ? "postgres://127.0.0.1/unused" : "mysql://127.0.0.1/unused" };
  const driver = await createDriver(target);
  try {
    return use(driver);
  } finally {
    await driver.close();
  }
}
