/**
 * Startup probes (DRIVERS.md, "Start-up probes"), on two connections A and B:
 *
 * - `advisoryLock`: A keeps its backend while B runs, and A's session lock refuses B. Where it
 *   fails (a transaction pooler) the advisory form is refused, and statements go unnamed.
 * - `skipLocked`: B's `FOR UPDATE SKIP LOCKED` skips a row A holds (core's `probeRowLocks`).
 * - `listen`: A, LISTENing, hears B's notification after running a transaction.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { ConnectionLostError, type TableDefinition, UnsafeTopologyError } from "@rowclaim/core";
import {
  connectionWithin,
  DecidedOnce,
  type DetectedCapabilities,
  ProbeFindings,
  type ProbeName,
  probeRowLocks,
  type StartupProbe,
} from "@rowclaim/core/driver";
import { HeldConnection } from "./connection.js";
import { isConnectionLost } from "./normalize-error.js";
import type {
  NotificationLike,
  PoolClientLike,
  PoolLike,
  QueryConfigLike,
  QueryResultLike,
} from "./pool-like.js";
import { quoteIdent, tableRef } from "./sql.js";

/** How long the LISTEN probe waits for its notification, in milliseconds. */
export const listenProbeTimeoutMs = 2000;

/** How long a probe waits for its second connection before it gives up deciding, in milliseconds. */
export const secondConnectionTimeoutMs = 2000;

const backendSql = "SELECT pg_backend_pid() AS pid";
const tryLockSql = "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked";
const unlockSql = "SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS unlocked";
const notifySql = "SELECT pg_notify($1, 'probe')";
const clockSql = "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms";

function skipLockedSql(table: TableDefinition, skip: boolean): string {
  const id = quoteIdent(table.columns.id);
  return skip
    ? `SELECT ${id} FROM ${tableRef(table)} WHERE ${id} = $1 FOR UPDATE SKIP LOCKED`
    : `SELECT ${id} AS id FROM ${tableRef(table)} ORDER BY ${id} LIMIT 1 FOR UPDATE SKIP LOCKED`;
}

/** A server's refusal fails the probe; a lost connection decides nothing and is thrown. */
function refusedByServer(error: unknown): boolean {
  if (isConnectionLost(error)) throw error;
  return true;
}

function randomName(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("hex")}`;
}

/** Checks out a second client, or `undefined` when the pool gives none in time (a pool of one). */
function secondClient(pool: PoolLike): Promise<HeldConnection | undefined> {
  return connectionWithin(HeldConnection.acquire(pool), secondConnectionTimeoutMs, (late) => late.release());
}

/** The probes of one driver and their cached results (core's `ProbeFindings`). */
export class PostgresProbes {
  readonly #raw: PoolLike;
  readonly #findings: ProbeFindings;
  readonly #pinned = new DecidedOnce<boolean>();
  readonly #skipLocked = new DecidedOnce<boolean>();
  readonly #listen = new DecidedOnce<boolean>();
  #listenRefused = false;
  /** The pool the driver runs its statements on: unnamed statements where sessions are not kept. */
  readonly pool: PoolLike;
  /** The probes in the order they run. */
  readonly #probes: readonly StartupProbe[] = [
    {
      name: "advisoryLock",
      forms: ["advisory"],
      safe: async () => {
        await this.sessionPinned();
        return this.#findings.found("advisoryLock");
      },
      refusal: (table) =>
        `Table "${table.name}" takes the advisory lock form, but a PostgreSQL session advisory lock taken on one connection of this driver's pool did not exclude another connection (or the connection did not keep its server session): the pool reaches PostgreSQL through a pooler in transaction mode (PgBouncer pool_mode=transaction, a serverless proxy), where keys would not exclude and rows would be delivered twice. Give the driver a direct URL or a session-mode pooler URL, or use the lease form (columns.lockedUntil), which works behind a transaction pooler. To skip this check: createPostgresDriver({ skipProbes: ["advisoryLock"] }).`,
    },
    {
      name: "skipLocked",
      forms: ["rowLock"],
      safe: (table) => this.#skipLocked.get(() => this.#probeSkipLocked(table)),
      refusal: (table) =>
        `Table "${table.name}" takes the row lock form, but a row held FOR UPDATE by one connection was not skipped by another connection's FOR UPDATE SKIP LOCKED: this database does not keep row locks the way the form needs, and rows would be delivered twice. Use the lease form (columns.lockedUntil). To skip this check: createPostgresDriver({ skipProbes: ["skipLocked"] }).`,
    },
  ];

  constructor(raw: PoolLike, skip: readonly ProbeName[] = []) {
    this.#raw = raw;
    this.#findings = new ProbeFindings(skip);
    this.pool = new SessionAwarePool(raw, () => this.sessionPinned());
  }

  /** What the probes found so far. */
  detected(): DetectedCapabilities {
    return this.#findings.detected();
  }

  /** Whether a client keeps its server session (`true` where `advisoryLock` is skipped or undecided). */
  async sessionPinned(): Promise<boolean> {
    if (this.#findings.skips("advisoryLock")) return true;
    return (await this.#pinned.get(() => this.#probeSession())) ?? true;
  }

  /**
   * Runs the probes `table`'s form relies on.
   *
   * @throws {UnsafeTopologyError} `PROBE_FAILED`, naming the probe and the fix.
   */
  check(table: TableDefinition): Promise<void> {
    return this.#findings.check(table, this.#probes);
  }

  /**
   * Whether LISTEN survives a transaction on its connection; where not, the first call throws
   * (`PROBE_FAILED`, the broker warns and polls) and later ones resolve `false`.
   */
  async checkListen(table: TableDefinition): Promise<boolean> {
    if (this.#findings.skips("listen")) return true;
    if ((await this.#listen.get(() => this.#probeListen())) === false) {
      if (this.#listenRefused) return false;
      this.#listenRefused = true;
      throw new UnsafeTopologyError(
        `Table "${table.name}": a LISTEN on this driver's pool did not hear a notification after its connection ran a transaction (a pooler in transaction mode hands the session to other clients), so publishes from other processes cannot wake this subscription; it polls instead. For cross-process wake-ups give the driver a direct or session-mode URL. To skip this check: createPostgresDriver({ skipProbes: ["listen"] }).`,
        { table: table.name, probe: "listen" },
      );
    }
    return true;
  }

  /** The database's clock (`clock_timestamp()`); a lost connection throws `CONNECTION_LOST`. */
  async databaseTime(): Promise<Date> {
    try {
      const result = await this.#raw.query({ text: clockSql });
      return new Date(Number(result.rows[0]?.ms));
    } catch (error) {
      if (!isConnectionLost(error)) throw error;
      throw new ConnectionLostError(
        `rowclaim/postgres: reading the database's clock (the clock-skew check of lease tables) lost its connection: ${error instanceof Error ? error.message : String(error)}. Check that the server is up, then retry.`,
        { cause: error },
      );
    }
  }

  async #probeSession(): Promise<boolean> {
    const key = randomName("rowclaim.probe.");
    const a = await HeldConnection.acquire(this.#raw);
    let b: HeldConnection | undefined;
    let aHeld = 0;
    let bHeld = 0;
    try {
      b = await secondClient(this.#raw);
      if (b === undefined) return true;
      // Does A keep its server session while B runs?
      const pid = async (client: HeldConnection): Promise<unknown> =>
        (await client.query({ text: backendSql })).rows[0]?.pid;
      const first = await pid(a);
      const other = await pid(b);
      const again = await pid(a);
      const pinned = first === again && other !== first;
      // Does a session lock taken by A refuse B?
      let excludes = false;
      try {
        const lockedA = (await a.query({ text: tryLockSql, values: [key] })).rows[0]?.locked === true;
        if (lockedA) aHeld += 1;
        const lockedB = (await b.query({ text: tryLockSql, values: [key] })).rows[0]?.locked === true;
        if (lockedB) bHeld += 1;
        const unlocked = (await a.query({ text: unlockSql, values: [key] })).rows[0]?.unlocked === true;
        if (unlocked) aHeld -= 1;
        excludes = pinned && lockedA && !lockedB && unlocked;
      } catch (error) {
        excludes = !refusedByServer(error);
      }
      this.#findings.record("advisoryLock", excludes);
      return pinned;
    } finally {
      // Whatever was taken is given back, quietly, on the client that took it.
      for (; bHeld > 0 && b !== undefined; bHeld -= 1) {
        await b.query({ text: unlockSql, values: [key] }).catch(() => undefined);
      }
      for (; aHeld > 0; aHeld -= 1) {
        await a.query({ text: unlockSql, values: [key] }).catch(() => undefined);
      }
      b?.release();
      a.release();
    }
  }

  async #probeSkipLocked(table: TableDefinition): Promise<boolean | undefined> {
    const works = await probeRowLocks<HeldConnection>({
      acquire: () => HeldConnection.acquire(this.#raw),
      second: () => secondClient(this.#raw),
      begin: async (a) => {
        await a.query({ text: "BEGIN" });
      },
      lockFirstRow: async (a) => {
        const held = (await a.query({ text: skipLockedSql(table, false) })).rows[0];
        return held === undefined ? undefined : { id: held.id };
      },
      skipsLocked: async (b, id) =>
        (await b.query({ text: skipLockedSql(table, true), values: [id] })).rows.length === 0,
      rollback: async (a) => {
        await a.query({ text: "ROLLBACK" });
      },
      release: (connection) => connection.release(),
      refusedByServer,
    });
    return works === undefined ? undefined : this.#findings.record("skipLocked", works);
  }

  async #probeListen(): Promise<boolean> {
    const channel = randomName("rowclaim_probe_");
    const a = await HeldConnection.acquire(this.#raw);
    let heard = false;
    let wake: () => void = () => {};
    const onNotification = (message: NotificationLike): void => {
      if (message.channel === channel) {
        heard = true;
        wake();
      }
    };
    a.client.on("notification", onNotification);
    try {
      try {
        await a.query({ text: `LISTEN ${quoteIdent(channel)}` });
      } catch (error) {
        // A server without LISTEN: polling.
        this.#findings.record("listen", !refusedByServer(error));
        return false;
      }
      await a.query({ text: "BEGIN" });
      await a.query({ text: "SELECT 1" });
      await a.query({ text: "COMMIT" });
      await this.#raw.query({ text: notifySql, values: [channel] });
      if (!heard) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, listenProbeTimeoutMs);
        });
        clearTimeout(timer);
      }
      return this.#findings.record("listen", heard);
    } finally {
      a.client.removeListener("notification", onNotification);
      await a.query({ text: "UNLISTEN *" }).catch(() => undefined);
      a.release();
    }
  }
}

function unnamed(config: QueryConfigLike): QueryConfigLike {
  return config.values === undefined ? { text: config.text } : { text: config.text, values: config.values };
}

/** A client whose statements are sent unnamed (no server-side prepared statement). */
function unnamedClient(client: PoolClientLike): PoolClientLike {
  return new Proxy(client, {
    get(target, property) {
      if (property === "query") return (config: QueryConfigLike) => target.query(unnamed(config));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The pool that learns once whether clients keep their sessions, and sends statements unnamed where not. */
class SessionAwarePool implements PoolLike {
  readonly #raw: PoolLike;
  readonly #pinned: () => Promise<boolean>;

  constructor(raw: PoolLike, pinned: () => Promise<boolean>) {
    this.#raw = raw;
    this.#pinned = pinned;
  }

  async query(config: QueryConfigLike): Promise<QueryResultLike> {
    return (await this.#pinned()) ? this.#raw.query(config) : this.#raw.query(unnamed(config));
  }

  async connect(): Promise<PoolClientLike> {
    const pinned = await this.#pinned();
    const client = await this.#raw.connect();
    return pinned ? client : unnamedClient(client);
  }

  end(): Promise<void> {
    return this.#raw.end();
  }
}
