/**
 * The pool the driver makes for itself from a URL: `mysql2/promise` with the settings the
 * driver relies on. A pool the user gives should be made the same way (see the README).
 *
 * @module
 */
import { createPool } from "mysql2/promise";
import type { PoolLike } from "./client.js";

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
 */
export const ownPoolOptions = Object.freeze({
  timezone: "Z",
  supportBigNumbers: true,
  bigNumberStrings: false,
  jsonStrings: true,
  dateStrings: false,
});

/** Makes the driver's own pool for `url`. */
export function createOwnPool(url: string, connectionLimit: number | undefined): PoolLike {
  const pool = createPool({
    uri: url,
    ...ownPoolOptions,
    ...(connectionLimit === undefined ? {} : { connectionLimit }),
  });
  pool.on("connection", (connection) => {
    connection.query("SET time_zone = '+00:00'");
  });
  return pool;
}
