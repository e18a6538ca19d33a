/**
 * The hand-written loop on PostgreSQL (`pg`): every statement `rowclaim bench` compares a form
 * with, written as a user would write it without rowclaim, one row a claim, on a connection of
 * each loop's own. Every identifier is quoted; values travel as parameters; statements are
 * named (prepared once per connection), as the driver's are.
 *
 * - row lock: `BEGIN`, `SELECT … FOR UPDATE SKIP LOCKED LIMIT 1`, the handler, `DELETE … WHERE id`,
 *   `COMMIT`;
 * - lease: `WITH … FOR UPDATE SKIP LOCKED UPDATE … SET locked_until, attempt + 1 RETURNING`, the
 *   handler, `DELETE … WHERE id AND locked_until = token`;
 * - advisory: a `SELECT` of due rows with their keys, `pg_try_advisory_lock(hashtextextended(key, 0))`
 *   on each until one is granted, `UPDATE … SET attempt + 1 WHERE id AND due RETURNING`, the
 *   handler, `DELETE … WHERE id`, `pg_advisory_unlock`.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import pg from "pg";
import {
  asyncNoOpHandler,
  type HandWrittenLoop,
  keyColumns,
  type LoopOptions,
  leaseExpiry,
  renderKey,
  runLoops,
} from "./loop.js";

/** Quotes a PostgreSQL identifier. */
function q(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

interface Statements {
  readonly claim: string;
  readonly settle: string;
  readonly take: string;
}

/** The loop's statements for one table (`$1` is always "now" in a claim). */
function statements(table: TableDefinition, form: LoopOptions["form"]): Statements {
  const c = table.columns;
  const t = table.schema === undefined ? q(table.name) : `${q(table.schema)}.${q(table.name)}`;
  const due: string[] = [];
  if (c.group !== undefined) due.push(`${q(c.group)} IS NULL`);
  if (c.processedAt !== undefined) due.push(`${q(c.processedAt)} IS NULL`);
  if (c.runAt !== undefined) due.push(`(${q(c.runAt)} IS NULL OR ${q(c.runAt)} <= $1)`);
  if (c.lockedUntil !== undefined) due.push(`(${q(c.lockedUntil)} IS NULL OR ${q(c.lockedUntil)} <= $1)`);
  const where = due.length === 0 ? "TRUE" : due.join(" AND ");
  const order = [
    ...(c.group === undefined ? [] : [q(c.group)]),
    ...(c.priority === undefined ? [] : [q(c.priority)]),
    ...(c.runAt === undefined ? [] : [`${q(c.runAt)} NULLS FIRST`]),
    q(c.id),
  ].join(", ");
  const read = [c.id, c.payload, ...(c.attempt === undefined ? [] : [c.attempt])].map(q).join(", ");
  const attemptSet = c.attempt === undefined ? "" : `, ${q(c.attempt)} = ${q(c.attempt)} + 1`;
  switch (form) {
    case "rowLock":
      return {
        claim: `SELECT ${read} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT 1 FOR UPDATE SKIP LOCKED`,
        settle: `DELETE FROM ${t} WHERE ${q(c.id)} = $1`,
        take: "",
      };
    case "lease": {
      const until = q(c.lockedUntil as string);
      return {
        claim:
          `WITH rc_pick AS (SELECT ${q(c.id)} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT 1 FOR UPDATE SKIP LOCKED) ` +
          `UPDATE ${t} SET ${until} = $2${attemptSet} FROM rc_pick WHERE ${t}.${q(c.id)} = rc_pick.${q(c.id)} ` +
          `RETURNING ${[c.id, c.payload, ...(c.attempt === undefined ? [] : [c.attempt])].map((column) => `${t}.${q(column)}`).join(", ")}`,
        settle: `DELETE FROM ${t} WHERE ${q(c.id)} = $1 AND ${until} = $2`,
        take: "",
      };
    }
    case "advisory": {
      const keys = keyColumns(table).map(q);
      const id = q(c.id);
      return {
        claim: `SELECT ${[id, ...keys].join(", ")} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT $2`,
        settle: `DELETE FROM ${t} WHERE ${id} = $1`,
        take:
          c.attempt === undefined
            ? `SELECT ${read} FROM ${t} WHERE ${id} = $2 AND ${where}`
            : `UPDATE ${t} SET ${q(c.attempt)} = ${q(c.attempt)} + 1 WHERE ${id} = $2 AND ${where} RETURNING ${read}`,
      };
    }
  }
}

const tryLockSql = "SELECT pg_try_advisory_lock(hashtextextended($1::text, 0)) AS locked";
const unlockSql = "SELECT pg_advisory_unlock(hashtextextended($1::text, 0)) AS unlocked";

/** Opens the hand-written loop of `options.form` on the PostgreSQL database at `url`. */
export async function openPostgresLoop(url: string, options: LoopOptions): Promise<HandWrittenLoop> {
  const { table, form } = options;
  let handler = options.handler ?? asyncNoOpHandler;
  const pool = new pg.Pool({ connectionString: url, max: options.connections });
  const sql = statements(table, form);
  const idColumn = table.columns.id;
  const named = (name: string, text: string, values: unknown[]): pg.QueryConfig => ({
    name: `rc_loop_${form}_${name}`,
    text,
    values,
  });

  const rowLockStep = async (client: pg.PoolClient): Promise<boolean> => {
    await client.query("BEGIN");
    try {
      const claimed = await client.query(named("claim", sql.claim, [new Date()]));
      const row = claimed.rows[0] as Record<string, unknown> | undefined;
      if (row === undefined) {
        await client.query("COMMIT");
        return false;
      }
      await handler(row[table.columns.payload]);
      await client.query(named("settle", sql.settle, [row[idColumn]]));
      await client.query("COMMIT");
      return true;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  };

  const leaseStep = async (client: pg.PoolClient): Promise<boolean> => {
    const expiry = leaseExpiry(table);
    const claimed = await client.query(named("claim", sql.claim, [new Date(), expiry]));
    const row = claimed.rows[0] as Record<string, unknown> | undefined;
    if (row === undefined) return false;
    await handler(row[table.columns.payload]);
    await client.query(named("settle", sql.settle, [row[idColumn], expiry]));
    return true;
  };

  const advisoryStep = async (client: pg.PoolClient, worker: number, workers: number): Promise<boolean> => {
    for (;;) {
      const found = await client.query(named("claim", sql.claim, [new Date(), workers * 2]));
      const candidates = found.rows as Record<string, unknown>[];
      if (candidates.length === 0) return false;
      // Each loop starts at its own place in the list, so that loops do not all race for the first key.
      for (let index = 0; index < candidates.length; index += 1) {
        const candidate = candidates[(worker + index) % candidates.length] as Record<string, unknown>;
        const key = renderKey(table, candidate);
        const lock = await client.query(named("lock", tryLockSql, [key]));
        if ((lock.rows[0] as { locked: boolean }).locked !== true) continue;
        try {
          const taken = await client.query(named("take", sql.take, [new Date(), candidate[idColumn]]));
          const row = taken.rows[0] as Record<string, unknown> | undefined;
          if (row === undefined) continue;
          await handler(row[table.columns.payload]);
          await client.query(named("settle", sql.settle, [row[idColumn]]));
          return true;
        } finally {
          await client.query(named("unlock", unlockSql, [key]));
        }
      }
    }
  };

  return {
    async drain(workers, given, claiming) {
      handler = given ?? options.handler ?? asyncNoOpHandler;
      const clients = await Promise.all(Array.from({ length: workers }, () => pool.connect()));
      try {
        return await runLoops(
          workers,
          (worker) => {
            const client = clients[worker] as pg.PoolClient;
            if (form === "rowLock") return rowLockStep(client);
            if (form === "lease") return leaseStep(client);
            return advisoryStep(client, worker, workers);
          },
          claiming,
        );
      } finally {
        for (const client of clients) client.release();
      }
    },
    async close() {
      await pool.end();
    },
  };
}
