/** A postgres.js `Sql` as the pool `@rowclaim/postgres` runs on ({@link PoolLike}); see the README. @module */
import type {
  NotificationLike,
  PoolClientLike,
  PoolLike,
  QueryConfigLike,
  QueryResultLike,
} from "@rowclaim/postgres/executor";
import type { ListenMeta, ReservedSql, Sql } from "postgres";

/** postgres.js's own codes for a connection that is gone (or never came), with the SQLSTATE they stand for. */
const lostCodes: Readonly<Record<string, string>> = {
  CONNECTION_CLOSED: "08006",
  CONNECTION_ENDED: "08003",
  CONNECTION_DESTROYED: "08003",
  CONNECT_TIMEOUT: "08001",
};

/** `error` in `pg`'s shape: a lost connection gets a class 08 `code`, a server error `column`/`constraint`. */
export function asPgError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const fields = error as Error & Record<string, unknown>;
  const code = typeof fields.code === "string" ? lostCodes[fields.code] : undefined;
  if (code !== undefined)
    return Object.assign(new Error(`connection lost: ${error.message}`, { cause: error }), { code });
  fields.column ??= fields.column_name;
  fields.constraint ??= fields.constraint_name;
  return error;
}

/** Whether `error` (as {@link asPgError} left it) means the connection is gone. */
function lost(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("08");
}

/** `LISTEN "channel"` as the dialect writes it: the channel, else `undefined`. */
function listenedChannel(text: string): string | undefined {
  const match = /^LISTEN "((?:[^"]|"")+)"$/.exec(text);
  return match?.[1]?.replaceAll('""', '"');
}

/** An array element as it stands in a PostgreSQL array literal. */
function element(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (Array.isArray(value)) return `{${value.map(element).join(",")}}`;
  const text =
    value instanceof Date
      ? value.toISOString()
      : value instanceof Uint8Array
        ? `\\x${Buffer.from(value).toString("hex")}`
        : typeof value === "object"
          ? JSON.stringify(value)
          : String(value);
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/**
 * The values for postgres.js: `undefined` as NULL; strings and arrays (as array literals) typed
 * `unknown` (705) like a literal, so JSON text for `jsonb` is not encoded again, `$1::int8[]` casts.
 */
function valuesFor(sql: Sql, values: readonly unknown[] | undefined): never[] {
  return (values ?? []).map((value) =>
    value === undefined
      ? null
      : typeof value === "string"
        ? sql.typed(value, 705)
        : Array.isArray(value)
          ? sql.typed(element(value), 705)
          : value,
  ) as never[];
}

/** Runs one statement on `sql` (the pool, or a reserved connection). */
async function run(sql: Sql, config: QueryConfigLike): Promise<QueryResultLike & { pid?: number }> {
  try {
    const result = await sql.unsafe(config.text, valuesFor(sql, config.values), {
      prepare: config.name !== undefined,
    });
    const count = (result as { count?: unknown }).count;
    const pid = (result as { state?: { pid?: unknown } }).state?.pid;
    return {
      rows: result as unknown as Record<string, unknown>[],
      rowCount: typeof count === "number" && Number.isFinite(count) ? count : null,
      ...(typeof pid === "number" ? { pid } : {}),
    };
  } catch (error) {
    throw asPgError(error);
  }
}

/** What the driver's transactional bodies and held connections get: a reserved postgres.js connection that is also a {@link PoolClientLike}. */
export type ReservedClient = ReservedSql & PoolClientLike;

/**
 * A reserved connection as a {@link PoolClientLike}: one that broke is not `release()`d (postgres.js
 * keeps it among its closed ones); one to destroy has its backend ended from the pool.
 */
function heldClient(sql: Sql, reserved: ReservedSql): ReservedClient {
  const notified = new Set<(message: NotificationLike) => void>();
  const listening: ListenMeta[] = [];
  let pid: number | undefined;
  let gone = false;
  const giveBack = reserved.release.bind(reserved);
  const query = async (config: QueryConfigLike): Promise<QueryResultLike> => {
    const channel = listenedChannel(config.text);
    if (channel !== undefined) {
      let heard = false;
      const emit = (): void => {
        for (const listener of notified) listener({ channel });
      };
      // After a reconnect postgres.js LISTENs again: one wake for what may have been missed.
      const onListen = (): void => {
        if (heard) emit();
        heard = true;
      };
      listening.push(await sql.listen(channel, emit, onListen));
      return { rows: [], rowCount: null };
    }
    if (config.text === "UNLISTEN *") await Promise.all(listening.splice(0).map((meta) => meta.unlisten()));
    try {
      const result = await run(reserved, config);
      pid ??= result.pid;
      return result;
    } catch (error) {
      gone ||= lost(error);
      throw error;
    }
  };
  const release = (destroy?: Error | boolean): void => {
    if (gone) return;
    gone = true;
    void Promise.all(listening.splice(0).map((meta) => meta.unlisten().catch(() => undefined)));
    if (destroy === undefined || destroy === false || pid === undefined) {
      giveBack();
      return;
    }
    void run(sql, { text: "SELECT pg_terminate_backend($1)", values: [pid] }).catch(() => giveBack());
  };
  const on = (event: string, listener: (message: NotificationLike) => void): unknown =>
    event === "notification" && notified.add(listener);
  const removeListener = (event: string, listener: (message: NotificationLike) => void): unknown =>
    event === "notification" && notified.delete(listener);
  return Object.assign(reserved, { query, release, on, removeListener }) as ReservedClient;
}

/** `sql` as the pool `@rowclaim/postgres` runs on; `end` ends `sql` (called only for an instance the driver made). */
export function poolOf(sql: Sql): PoolLike {
  return {
    query: (config) => run(sql, config),
    connect: async () => {
      try {
        return heldClient(sql, await sql.reserve());
      } catch (error) {
        throw asPgError(error);
      }
    },
    end: () => sql.end({ timeout: 5 }),
    // The pool's size, where the driver checks a subscription's workers against it.
    options: { max: (sql as Partial<Sql>).options?.max },
  } as PoolLike;
}
