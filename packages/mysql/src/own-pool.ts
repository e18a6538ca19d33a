/**
 * The pool the driver makes for itself from a URL, with the settings a user's pool needs too.
 *
 * @module
 */
import type { IsolationLevel } from "@rowclaim/core";
import { createPool } from "mysql2/promise";
import type { PoolLike } from "./pool-like.js";
import { transactionSql } from "./sql.js";
import { markSessionLevel } from "./transaction.js";

/** The default isolation level of the driver's own sessions: the claims' level unless a table names one (README, "Why READ COMMITTED"). */
export const OWN_POOL_ISOLATION: IsolationLevel = "read committed";

/**
 * The mysql2 options the driver sets on a pool it makes, beside the URL: Dates as UTC (each session
 * also runs `SET time_zone = '+00:00'`), BIGINT ids as numbers (exact strings past 2^53), JSON as
 * text (DRIVERS.md, "The JSON contract"), DATETIME as `Date`, and no stack captured per statement
 * (`trace: false`, the largest single cost measured in the driver's own code).
 */
export const ownPoolOptions = Object.freeze({
  timezone: "Z",
  supportBigNumbers: true,
  bigNumberStrings: false,
  jsonStrings: true,
  dateStrings: false,
  trace: false,
});

/** The callback-style mysql2 connection a pool's `connection` event passes. */
interface CallbackConnection {
  query(sql: string, callback?: (error: unknown) => void): unknown;
}

/** Makes the driver's own pool for `url`. */
export function createOwnPool(url: string, connectionLimit: number | undefined): PoolLike {
  const pool = createPool({
    uri: url,
    ...ownPoolOptions,
    ...(connectionLimit === undefined ? {} : { connectionLimit }),
  });
  // mysql2 passes the callback-style connection (its types say the promise one).
  pool.on("connection", (promised) => {
    const connection = promised as unknown as CallbackConnection;
    connection.query("SET time_zone = '+00:00'");
    // Set once here, a claim needs no SET TRANSACTION of its own (`beginAt`).
    connection.query(transactionSql.sessionIsolation(OWN_POOL_ISOLATION), (error: unknown) => {
      if (error === null || error === undefined) markSessionLevel(connection, OWN_POOL_ISOLATION);
    });
  });
  return pool;
}
