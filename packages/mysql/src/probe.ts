/**
 * Startup probes of the live server, each run once per driver (core's `ProbeFindings`; the
 * refusals say why each matters): `multiMaster` (`wsrep_on`: Galera carries neither row locks nor
 * `GET_LOCK` to other nodes), `advisoryLock` (a second connection refused `GET_LOCK` and shown the
 * first by `IS_USED_LOCK`), `skipLocked` (a row held `FOR UPDATE` skipped by another connection).
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { BrokerError, ConnectionLostError, type TableDefinition } from "@rowclaim/core";
import {
  connectionWithin,
  DecidedOnce,
  type DetectedCapabilities,
  formLabels,
  ProbeFindings,
  type ProbeName,
  probeRowLocks,
  type StartupProbe,
} from "@rowclaim/core/driver";
import { classifyError } from "./normalize-error.js";
import { type ConnectionLike, letGo, type PoolLike, selectRows } from "./pool-like.js";
import { quoteDefinedTable, quoteIdentifier } from "./sql.js";

/** How long a probe waits for its second connection before it gives up deciding, in milliseconds. */
export const secondConnectionTimeoutMs = 2000;

const clusterSql =
  "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'WSREP_ON'), " +
  "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE')";
const clusterFallbackSql = "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'";
const lockSql = "SELECT CONNECTION_ID(), GET_LOCK(?, 0)";
const usedSql = "SELECT IS_USED_LOCK(?)";
const releaseSql = "SELECT RELEASE_LOCK(?)";
const clockSql = "SELECT UNIX_TIMESTAMP(NOW(3)) * 1000";

function skipLockedSql(table: TableDefinition, one: boolean): string {
  const id = quoteIdentifier(table.columns.id, table.name);
  return one
    ? `SELECT ${id} FROM ${quoteDefinedTable(table)} WHERE ${id} = ? FOR UPDATE SKIP LOCKED`
    : `SELECT ${id} FROM ${quoteDefinedTable(table)} ORDER BY ${id} LIMIT 1 FOR UPDATE SKIP LOCKED`;
}

/** A server's refusal (an unknown function or clause) fails the probe; a lost connection (`fatal`) decides nothing: thrown. */
function refusedByServer(error: unknown): boolean {
  const { fatal, errno } = (error ?? {}) as { fatal?: unknown; errno?: unknown };
  if (fatal === true || typeof errno !== "number" || errno <= 0) throw error;
  return true;
}

/** Checks out a second connection, or `undefined` when the pool gives none in time (a pool of one). */
function secondConnection(pool: PoolLike): Promise<ConnectionLike | undefined> {
  return connectionWithin(pool.getConnection(), secondConnectionTimeoutMs, (late) => late.release());
}

/** The probes of one driver and their cached results; the algorithm is core's (`ProbeFindings`). */
export class MysqlProbes {
  readonly #pool: PoolLike;
  readonly #findings: ProbeFindings;
  readonly #cluster = new DecidedOnce<boolean>();
  readonly #advisory = new DecidedOnce<boolean>();
  readonly #skipLocked = new DecidedOnce<boolean>();
  #clusterSize: number | undefined;
  readonly #probes: readonly StartupProbe[] = [
    {
      name: "multiMaster",
      forms: ["rowLock", "advisory"],
      safe: async () => !(await this.#cluster.get(() => this.#probeCluster())),
      refusal: (table) =>
        `Table "${table.name}" takes the ${formLabels[table.form]} form, but this server is a node of a Galera cluster (wsrep_on = ON, cluster size ${this.#clusterSize ?? "unknown"}): Galera does not carry ${table.form === "advisory" ? "GET_LOCK" : "row locks (FOR UPDATE)"} to the other nodes, so a subscriber on another node would take the same row and it would be delivered twice. Use the lease form (columns.lockedUntil), whose claims and settlements certification orders across nodes, or point every subscriber of this table at one node. To skip this check: createMysqlDriver({ skipProbes: ["multiMaster"] }).`,
    },
    {
      name: "advisoryLock",
      forms: ["advisory"],
      safe: () => this.#advisory.get(() => this.#probeAdvisory()),
      refusal: (table) =>
        `Table "${table.name}" takes the advisory lock form, but GET_LOCK taken on one connection of this driver's pool did not exclude another connection (a proxy that does not keep sessions, or locks that are no-ops): keys would not exclude and rows would be delivered twice. Give the driver a direct URL, or use the lease form (columns.lockedUntil). To skip this check: createMysqlDriver({ skipProbes: ["advisoryLock"] }).`,
    },
    {
      name: "skipLocked",
      forms: ["rowLock"],
      safe: (table) => this.#skipLocked.get(() => this.#probeSkipLocked(table)),
      refusal: (table) =>
        `Table "${table.name}" takes the row lock form, but a row held FOR UPDATE by one connection was not skipped by another connection's FOR UPDATE SKIP LOCKED: this server does not keep row locks the way the form needs, and rows would be delivered twice. Use the lease form (columns.lockedUntil). To skip this check: createMysqlDriver({ skipProbes: ["skipLocked"] }).`,
    },
  ];

  constructor(pool: PoolLike, skip: readonly ProbeName[] = []) {
    this.#pool = pool;
    this.#findings = new ProbeFindings(skip);
  }

  /** What the probes found so far. */
  detected(): DetectedCapabilities {
    return this.#findings.detected();
  }

  /** Runs the probes `table`'s form relies on; `UnsafeTopologyError` (`PROBE_FAILED`) names a failed one and the fix. */
  check(table: TableDefinition): Promise<void> {
    return this.#findings.check(table, this.#probes);
  }

  /** The server's clock (`NOW(3)`), for the broker's clock-skew check of lease tables. */
  async databaseTime(): Promise<Date> {
    try {
      const rows = await selectRows(this.#pool, clockSql, []);
      return new Date(Math.round(Number(rows[0]?.[0])));
    } catch (error) {
      if (BrokerError.is(error) || !classifyError(error).connectionLost) throw error;
      throw new ConnectionLostError(
        `rowclaim/mysql: reading the database's clock (the clock-skew check of lease tables) lost its connection: ${error instanceof Error ? error.message : String(error)}. Check that the server is up, then retry.`,
        { cause: error },
      );
    }
  }

  async #probeCluster(): Promise<boolean> {
    let on: unknown;
    let size: unknown;
    try {
      const [row] = await selectRows(this.#pool, clusterSql, []);
      on = row?.[0];
      size = row?.[1];
    } catch {
      // MySQL 8 keeps variables in performance_schema; SHOW works everywhere.
      const rows = await selectRows(this.#pool, clusterFallbackSql, []);
      on = rows[0]?.[1];
    }
    this.#clusterSize = size === undefined || size === null ? undefined : Number(size);
    return this.#findings.record("multiMaster", String(on ?? "OFF").toUpperCase() === "ON");
  }

  async #probeAdvisory(): Promise<boolean | undefined> {
    const name = `rowclaim.probe.${randomBytes(12).toString("hex")}`;
    const a = await this.#pool.getConnection();
    let b: ConnectionLike | undefined;
    let aHeld = false;
    let bHeld = false;
    try {
      b = await secondConnection(this.#pool);
      if (b === undefined) return undefined;
      let works: boolean;
      try {
        const [[aId, aLocked] = []] = await selectRows(a, lockSql, [name]);
        aHeld = Number(aLocked) === 1;
        const [[, bLocked] = []] = await selectRows(b, lockSql, [name]);
        bHeld = Number(bLocked) === 1;
        const [[holder] = []] = await selectRows(b, usedSql, [name]);
        works = aHeld && !bHeld && Number(holder) === Number(aId);
      } catch (error) {
        works = !refusedByServer(error);
      }
      return this.#findings.record("advisoryLock", works);
    } finally {
      if (bHeld && b !== undefined) await selectRows(b, releaseSql, [name]).catch(() => undefined);
      if (aHeld) await selectRows(a, releaseSql, [name]).catch(() => undefined);
      if (b !== undefined) letGo(b, false);
      letGo(a, false);
    }
  }

  async #probeSkipLocked(table: TableDefinition): Promise<boolean | undefined> {
    const works = await probeRowLocks<ConnectionLike>({
      acquire: () => this.#pool.getConnection(),
      second: () => secondConnection(this.#pool),
      begin: async (a) => {
        await a.query({ sql: "START TRANSACTION" });
      },
      lockFirstRow: async (a) => {
        const [[held] = []] = await selectRows(a, skipLockedSql(table, false), []);
        return held === undefined ? undefined : { id: held };
      },
      skipsLocked: async (b, id) => (await selectRows(b, skipLockedSql(table, true), [id])).length === 0,
      rollback: async (a) => {
        await a.query({ sql: "ROLLBACK" });
      },
      release: letGo,
      refusedByServer,
    });
    return works === undefined ? undefined : this.#findings.record("skipLocked", works);
  }
}
