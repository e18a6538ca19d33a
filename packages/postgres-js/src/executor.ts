/** A postgres.js `Sql` as the pool `@rowclaim/postgres` runs on ({@link PoolLike}); see the README. @module */
import {
  ArrayParam,
  isConnectionLost,
  type NotificationLike,
  type PoolClientLike,
  type PoolLike,
  type QueryConfigLike,
  type QueryResultLike,
} from "@rowclaim/postgres/executor";
import type { ListenMeta, ReservedSql, Sql } from "postgres";

/** postgres.js's own codes for a connection that is gone (or never came), with the SQLSTATE they stand for. */
const closedCodes = { CONNECTION_CLOSED: "08006", CONNECTION_ENDED: "08003", CONNECTION_DESTROYED: "08003" };
const lostCodes: Readonly<Record<string, string>> = { ...closedCodes, CONNECT_TIMEOUT: "08001" };

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

/** `LISTEN "channel"` as the dialect writes it: the channel, else `undefined`. */
function listenedChannel(text: string): string | undefined {
  const match = /^LISTEN "((?:[^"]|"")+)"$/.exec(text);
  return match?.[1]?.replaceAll('""', '"');
}

/** An array element as `pg` would render it for a literal (`ArrayParam` quotes it). */
const render = (value: unknown): unknown => (value instanceof Date ? value.toISOString() : value);

/**
 * The values for postgres.js: `undefined` as NULL; strings and arrays (as array literals) typed
 * `unknown` (705) like a literal, so JSON text for `jsonb` is not encoded again, `$1::int8[]` casts.
 */
function valuesFor(sql: Sql, values: readonly unknown[] | undefined): never[] {
  return (values ?? []).map((value) => {
    if (value === undefined) return null;
    if (typeof value === "string") return sql.typed(value, 705);
    const array = Array.isArray(value) ? new ArrayParam(value) : value;
    return array instanceof ArrayParam ? sql.typed(array.toPostgres(render), 705) : value;
  }) as never[];
}

/** postgres.js's connection under a reserved one, as the `onexecute` query option shows it (3.4). */
type Connection = {
  onclose?: (() => void) | null;
  terminate?: () => void;
  reserved?: unknown;
  execute?: (statement: {
    options?: { refuse?: () => boolean };
    reject?: (error: unknown) => void;
  }) => unknown;
  rowclaimGuarded?: true;
};

/** Runs one statement on `sql`: the pool, or a reserved connection, whose `onexecute` learns its connection. */
async function run(sql: Sql, config: QueryConfigLike, held?: object): Promise<QueryResultLike> {
  try {
    const options = { prepare: config.name !== undefined, ...held };
    const result = await sql.unsafe(config.text, valuesFor(sql, config.values), options);
    const count = (result as { count?: unknown }).count;
    const rowCount = typeof count === "number" && Number.isFinite(count) ? count : null;
    return { rows: result as unknown as Record<string, unknown>[], rowCount };
  } catch (error) {
    throw asPgError(error);
  }
}

/** What a statement on a reserved connection that closed, or was released, rejects with. */
const closedError = (): unknown =>
  asPgError(Object.assign(new Error("released or closed"), { code: "CONNECTION_ENDED" }));
const refused = (): Promise<never> => Promise.reject(closedError());

/**
 * Makes `connection` (once) reject the statements whose `refuse()` says their reservation closed or
 * ended: postgres.js 3.4 would write them to no socket, or to a session it reconnected for another.
 */
function guard(connection: Connection): void {
  const execute = connection.execute;
  if (connection.rowclaimGuarded || typeof execute !== "function") return;
  connection.rowclaimGuarded = true;
  connection.execute = (statement) => {
    if (!statement.options?.refuse?.()) return execute(statement);
    statement.reject?.(closedError());
    return true; // answered: the reservation's handler leaves the connection where it is
  };
}

/** What the driver's transactional bodies and held connections get: a reserved postgres.js connection that is also a {@link PoolClientLike}. */
export type ReservedClient = ReservedSql & PoolClientLike;

/**
 * A reserved connection as a {@link PoolClientLike}. On postgres.js 3.4 a statement sent on one whose
 * backend ended hangs or throws out of reach, and releasing it breaks the pool (porsager/postgres#1199):
 * once it closed or was released, nothing more is sent (a body's statements too); closed, it is kept.
 * postgres.js shows the connection only to statements without parameters: an empty one goes first.
 */
function heldClient(sql: Sql, reserved: ReservedSql): ReservedClient {
  const notified = new Set<(message: NotificationLike) => void>();
  const listening: ListenMeta[] = [];
  let connection: Connection | undefined;
  let lost = false;
  let released = false;
  const giveBack = reserved.release.bind(reserved);
  const onexecute = (seen: Connection): boolean => {
    if (connection === undefined && !lost) {
      connection = seen;
      guard(seen);
      seen.onclose = () => {
        lost = true;
      };
      // Closed before its first statement (postgres.js would write it to no socket, never answering): fail it.
      lost = seen.reserved === null;
      if (lost) seen.terminate?.();
    }
    return true;
  };
  const held = { onexecute, refuse: () => lost || released };
  void run(reserved, { text: "" }, held).catch(() => undefined);
  const query = async (config: QueryConfigLike): Promise<QueryResultLike> => {
    if (lost || released) return refused();
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
      return await run(reserved, config, held);
    } catch (error) {
      lost ||= isConnectionLost(error);
      throw error;
    }
  };
  const release = (destroy?: Error | boolean): void => {
    if (released) return;
    released = true;
    void Promise.all(listening.splice(0).map((meta) => meta.unlisten().catch(() => undefined)));
    if (lost) return;
    if (destroy && typeof connection?.terminate === "function") connection.terminate();
    else {
      if (connection) connection.onclose = null;
      giveBack();
    }
  };
  const on = (event: string, listener: (message: NotificationLike) => void): unknown =>
    event === "notification" && notified.add(listener);
  const removeListener = (event: string, listener: (message: NotificationLike) => void): unknown =>
    event === "notification" && notified.delete(listener);
  Object.assign(reserved, { query, release, on, removeListener });
  return new Proxy(reserved, {
    apply: (target, self, args) => (lost || released ? refused() : Reflect.apply(target, self, args)),
    get: (target, key) => (key === "unsafe" && (lost || released) ? refused : Reflect.get(target, key)),
  }) as ReservedClient;
}

/** `sql` as the pool `@rowclaim/postgres` runs on; `end` ends `sql` (called only for an instance the driver made). */
export function poolOf(sql: Sql): PoolLike {
  return {
    query: (config) => run(sql, config),
    connect: () =>
      sql.reserve().then(
        (reserved) => heldClient(sql, reserved),
        (error: unknown) => Promise.reject(asPgError(error)),
      ),
    end: () => sql.end({ timeout: 5 }),
    options: { max: (sql as Partial<Sql>).options?.max }, // the pool's size, for the driver's pool-size check
  } as PoolLike;
}
