/**
 * The pool the driver makes for itself from a URL: `mysql2/promise` with the settings the
 * driver relies on. A pool the user gives should be made the same way (see the README).
 *
 * @module
 */

import type { IsolationLevel } from "@rowclaim/core";
import { createPool } from "mysql2/promise";
import type { PoolLike } from "./pool-like.js";
import { transactionSql } from "./sql.js";
import { markSessionLevel } from "./transaction.js";

/**
 * The default isolation level of every session of the driver's own pool: READ COMMITTED, the
 * level claims run at unless a table names another (see the README, "Why READ COMMITTED"). A
 * transactional handler's body and a transactional publish on the driver's pool run at it too.
 */
export const OWN_POOL_ISOLATION: IsolationLevel = "read committed";

/**
 * The mysql2 options the driver sets on a pool it makes, beside the URL:
 *
 * - `timezone: "Z"`: Dates are written and read as UTC, so a DATETIME holds exactly the instant
 *   written (lease tokens, runAt), whatever the host's zone; each session also runs
 *   `SET time_zone = '+00:00'` so that TIMESTAMP columns agree.
 * - `supportBigNumbers: true` (without `bigNumberStrings`): BIGINT ids come back as numbers,
 *   and as exact strings only past 2^53.
 * - `jsonStrings: true`: JSON columns come back as their text, decoded by the driver.
 * - `dateStrings: false`: DATETIME values are `Date`s.
 * - `trace: false`: mysql2 would otherwise capture the caller's stack for every statement (an
 *   `Error.captureStackTrace` each, a few microseconds a statement on the deep async stacks of a
 *   claim or a settlement, measured as the largest single cost of the driver's own code) to
 *   graft it onto an error that may come. The driver's errors name the table, the operation and
 *   the statement they failed in (`normalizeError`), which a raw stack did not add to.
 *
 * Each session also runs `SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED` once, when it
 * connects ({@link OWN_POOL_ISOLATION}).
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
    // Claims run at READ COMMITTED unless a table names a level: set once here, a claim then
    // needs no SET TRANSACTION of its own (`beginAt`). Marked once the server confirmed it.
    connection.query(transactionSql.sessionIsolation(OWN_POOL_ISOLATION), (error: unknown) => {
      if (error === null || error === undefined) markSessionLevel(connection, OWN_POOL_ISOLATION);
    });
  });
  return pool;
}
