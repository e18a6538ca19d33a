/**
 * `@rowclaim/postgres-js`: the rowclaim driver for PostgreSQL on postgres.js. It is the
 * `@rowclaim/postgres` driver (`@rowclaim/postgres/executor`) on a postgres.js `Sql` instance:
 * the same claim forms, statements and behaviour, another client.
 *
 * @packageDocumentation
 */
import { InvalidArgumentError, type TableDefinition } from "@rowclaim/core";
import { type OptionKeySet, refuseUnknownOptions } from "@rowclaim/core/driver";
import {
  checkExecutorOptions,
  createPostgresDriverOn,
  executorOptionKeys,
  type PostgresExecutorDriver,
  type PostgresExecutorOptions,
  type QueryableLike,
} from "@rowclaim/postgres/executor";
import postgres, { type Sql } from "postgres";
import { poolOf, type ReservedClient } from "./executor.js";

export { asPgError, type ReservedClient } from "./executor.js";

/** How the driver reaches the database: a postgres.js instance you own, or a connection string. */
export type PostgresJsConnectionOptions =
  | {
      /** A postgres.js `sql` instance you own; the driver never ends it. */
      readonly sql: Sql;
    }
  | {
      /** A connection string; the driver makes its own postgres.js instance and ends it on `close()`. */
      readonly url: string;
      /** The instance's pool size (default 10). Row lock and advisory deliveries each hold a connection. */
      readonly max?: number;
      /** The `application_name` of its connections (default `"rowclaim"`). */
      readonly applicationName?: string;
    };

/** The options of {@link createPostgresJsDriver}: a connection, and those of `@rowclaim/postgres`. */
export type PostgresJsDriverOptions = PostgresJsConnectionOptions & PostgresExecutorOptions;

/** The PostgreSQL driver on postgres.js: `name` `"postgres-js"`, `dialect` `"postgres"`. */
export interface PostgresJsDriver extends PostgresExecutorDriver {
  readonly name: "postgres-js";
  /** Type only: transactional handler bodies receive the reserved postgres.js connection of the transaction. */
  readonly "~transactionClient"?: ReservedClient;
}

const caller = "createPostgresJsDriver()";
const connectionKeys = { sql: true, url: true, max: true, applicationName: true } as const;
const optionKeys = [
  ...Object.keys(connectionKeys satisfies OptionKeySet<PostgresJsConnectionOptions>),
  ...executorOptionKeys,
];

/**
 * A postgres.js `sql` of the caller's (a `sql.begin` transaction) as a client to publish on. It
 * is checked to be inside an open transaction once, before the first statement (`SAVEPOINT`
 * works only there): a pool's `sql`, or a transaction's after it ended, would commit at once.
 */
function publishClient(table: TableDefinition, client: unknown): unknown {
  if (typeof client !== "function" || typeof (client as Partial<Sql>).unsafe !== "function") return client;
  const tx = poolOf(client as Sql);
  let checked: Promise<void> | undefined;
  const check = async (): Promise<void> => {
    try {
      await tx.query({ text: "SAVEPOINT rowclaim_publish_check" });
      await tx.query({ text: "RELEASE SAVEPOINT rowclaim_publish_check" });
    } catch (error) {
      throw new InvalidArgumentError(
        `publish(${table.name}, …, { client }): the postgres.js sql given is not inside an open transaction (or its transaction failed), so the rows would commit at once. Pass the sql of sql.begin(), inside its callback.`,
        { table: table.name, cause: error },
      );
    }
  };
  return {
    async query(config) {
      checked ??= check();
      await checked;
      return tx.query(config);
    },
  } satisfies QueryableLike;
}

/**
 * Creates the PostgreSQL driver on postgres.js.
 *
 * @example
 * const driver = createPostgresJsDriver({ sql: postgres(process.env.DATABASE_URL, { max: 20 }) });
 * const broker = createBroker({ driver });
 */
export function createPostgresJsDriver(options: PostgresJsDriverOptions): PostgresJsDriver {
  const needs = `${caller} needs { sql } (a postgres.js instance you own) or { url } (a connection string).`;
  if (typeof options !== "object" || options === null) throw new InvalidArgumentError(needs);
  refuseUnknownOptions(options, optionKeys, caller);
  checkExecutorOptions(options, caller);
  let sql: Sql;
  let end: (() => Promise<void>) | undefined;
  if ("sql" in options && typeof options.sql === "function") sql = options.sql;
  else if ("url" in options && typeof options.url === "string" && options.url !== "") {
    sql = postgres(options.url, {
      max: options.max ?? 10,
      connection: { application_name: options.applicationName ?? "rowclaim" },
      onnotice: () => {},
    });
    end = () => sql.end({ timeout: 5 });
  } else throw new InvalidArgumentError(needs);
  const maker = { name: "postgres-js", caller, ...(end ? { end } : {}) };
  const driver = createPostgresDriverOn(poolOf(sql), options, maker);
  const publish = driver.publish.bind(driver);
  driver.publish = (table, rows, publishOptions) =>
    publish(table, rows, { ...publishOptions, client: publishClient(table, publishOptions.client) });
  return driver as PostgresJsDriver;
}
