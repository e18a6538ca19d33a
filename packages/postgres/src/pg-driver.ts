/**
 * `createPostgresDriver`: the rowclaim driver for PostgreSQL on `pg`, {@link createPostgresDriverOn}
 * on a `pg.Pool` (yours, or one it makes from a connection string and ends on `close()`).
 *
 * @module
 */
import { InvalidArgumentError } from "@rowclaim/core";
import { type OptionKeySet, refuseUnknownOptions } from "@rowclaim/core/driver";
import pg from "pg";
import type { PoolLike } from "./pool-like.js";
import {
  checkExecutorOptions,
  createPostgresDriverOn,
  executorOptionKeys,
  type PostgresExecutorDriver,
  type PostgresExecutorOptions,
} from "./postgres-driver.js";
import { driverTypeParsers } from "./timestamp-types.js";

/** How the driver reaches the database: a pool you own, or a connection string. */
export type PostgresConnectionOptions =
  | {
      /** A `pg.Pool` (or anything shaped like it) you own; the driver never ends it. */
      readonly pool: PoolLike;
    }
  | {
      /** A connection string; the driver makes its own `pg.Pool` and ends it on `close()`. */
      readonly url: string;
      /** The pool's size (default 10). Row lock and advisory deliveries each hold a connection. */
      readonly max?: number;
      /** The `application_name` of the pool's connections (default `"rowclaim"`). */
      readonly applicationName?: string;
    };

/** The options of {@link createPostgresDriver}. */
export type PostgresDriverOptions = PostgresConnectionOptions & PostgresExecutorOptions;

/** The keys `createPostgresDriver()` takes (checked against the option types when it compiles). */
const driverOptionKeys = Object.freeze([
  ...Object.keys({
    pool: true,
    url: true,
    max: true,
    applicationName: true,
  } satisfies OptionKeySet<PostgresConnectionOptions>),
  ...executorOptionKeys,
]);

/** Whether `pg` reads `url` as meant: `postgres(ql)://`, `socket:` or a socket folder (else `ENOTFOUND base`). */
function isPostgresUrl(url: string): boolean {
  if (url.startsWith("/")) return true;
  if (!URL.canParse(url)) return false;
  const { protocol } = new URL(url);
  return protocol === "postgres:" || protocol === "postgresql:" || protocol === "socket:";
}

/** A connection string as a message may show it: any password is masked. */
function maskedUrl(url: string): string {
  return url.replace(/(\/\/[^/@:]*:)[^/@]*@/, "$1***@");
}

/** Refuses an unknown option key and a `url` that is not a PostgreSQL connection URL (`INVALID_ARGUMENT`). */
function checkDriverOptions(options: object): void {
  refuseUnknownOptions(options, driverOptionKeys, "createPostgresDriver()");
  const url = (options as { url?: unknown }).url;
  if (typeof url === "string" && url !== "" && !isPostgresUrl(url)) {
    throw new InvalidArgumentError(
      `createPostgresDriver({ url }): ${JSON.stringify(maskedUrl(url))} is not a PostgreSQL connection URL. Write it as "postgres://user:password@host:5432/database" (or "socket:/path/to/socket/folder?db=database").`,
    );
  }
}

/** The PostgreSQL driver on `pg`: a core `Driver` whose `name` and `dialect` are `"postgres"`. */
export interface PostgresDriver extends PostgresExecutorDriver {
  readonly name: "postgres";
  /**
   * Type only: transactional handler bodies (`delivery.transaction(async (client) => …)`) receive
   * the `pg.PoolClient` of the transaction (a client of your pool, with `{ pool }`).
   */
  readonly "~transactionClient"?: pg.PoolClient;
}

const needs = "createPostgresDriver() needs { pool } (a pg.Pool you own) or { url } (a connection string).";

/**
 * Creates the PostgreSQL driver.
 *
 * @example
 * const driver = createPostgresDriver({ url: process.env.DATABASE_URL, max: 20 });
 * const broker = createBroker({ driver });
 */
export function createPostgresDriver(options: PostgresDriverOptions): PostgresDriver {
  if (typeof options !== "object" || options === null) throw new InvalidArgumentError(needs);
  checkDriverOptions(options);
  const caller = "createPostgresDriver()";
  checkExecutorOptions(options, caller);
  if ("pool" in options && options.pool !== undefined) {
    return createPostgresDriverOn(options.pool, options, { name: "postgres", caller }) as PostgresDriver;
  }
  if (!("url" in options) || typeof options.url !== "string" || options.url === "") {
    throw new InvalidArgumentError(needs);
  }
  // Pipelined: statements issued together cost one round trip (a `pg` without it ignores the option).
  const own = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "rowclaim",
    pipeline: true,
    // pg's parsers, but timestamps with time zone read without regular expressions (same Dates).
    types: driverTypeParsers(pg.types),
  });
  // An idle connection that dies is removed by the pool; the next checkout makes a new one.
  own.on("error", () => {});
  return createPostgresDriverOn(own, options, {
    name: "postgres",
    caller,
    end: () => own.end(),
  }) as PostgresDriver;
}
