/**
 * The hand-written loop on MySQL and MariaDB (`mysql2`): every statement `rowclaim bench`
 * compares a form with, written as a user would write it without rowclaim, one row a claim, on
 * a connection of each loop's own (sessions at READ COMMITTED, times in UTC). Every identifier is
 * quoted; values travel as parameters.
 *
 * - row lock: `START TRANSACTION`, `SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED`, the handler,
 *   `DELETE … WHERE id`, `COMMIT`;
 * - lease: `START TRANSACTION`, `SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED`, `UPDATE … SET
 *   locked_until, attempt + 1 WHERE id`, `COMMIT`, the handler, `DELETE … WHERE id AND
 *   locked_until = token`;
 * - advisory: a `SELECT` of due rows with their keys, `GET_LOCK(name, 0)` on each until one is
 *   granted (name: the database's name lower-cased, `.`, the key; its SHA-256 past 64
 *   characters), `UPDATE … SET attempt + 1 WHERE id AND due`, a `SELECT` of the row (MariaDB has
 *   no `UPDATE … RETURNING`), the handler, `DELETE … WHERE id`, `RELEASE_LOCK(name)`.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { TableDefinition } from "@rowclaim/core";
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from "mysql2/promise";
import { loadForDialect } from "../driver-packages.js";
import {
  asyncNoOpHandler,
  type HandWrittenLoop,
  keyColumns,
  type LoopOptions,
  leaseExpiry,
  renderKey,
  runLoops,
} from "./loop.js";

/** Quotes a MySQL identifier. */
function q(name: string): string {
  return `\`${name.replaceAll("`", "``")}\``;
}

interface Statements {
  /** The claim's select (row lock, lease: locking; advisory: candidates with keys). */
  readonly claim: string;
  /** Whether the claim's values include "now" twice (runAt and lockedUntil). */
  readonly nowCount: number;
  readonly leaseTake: string;
  readonly advisoryTake: string;
  readonly read: string;
  readonly settle: string;
}

function statements(table: TableDefinition, form: LoopOptions["form"]): Statements {
  const c = table.columns;
  const t = table.schema === undefined ? q(table.name) : `${q(table.schema)}.${q(table.name)}`;
  const due: string[] = [];
  let nowCount = 0;
  if (c.group !== undefined) due.push(`${q(c.group)} IS NULL`);
  if (c.processedAt !== undefined) due.push(`${q(c.processedAt)} IS NULL`);
  if (c.runAt !== undefined) {
    due.push(`(${q(c.runAt)} IS NULL OR ${q(c.runAt)} <= ?)`);
    nowCount += 1;
  }
  if (c.lockedUntil !== undefined) {
    due.push(`(${q(c.lockedUntil)} IS NULL OR ${q(c.lockedUntil)} <= ?)`);
    nowCount += 1;
  }
  const where = due.length === 0 ? "1" : due.join(" AND ");
  const order = [c.priority, c.runAt, c.id]
    .filter((column): column is string => column !== undefined)
    .map(q)
    .join(", ");
  const read = [c.id, c.payload, ...(c.attempt === undefined ? [] : [c.attempt])].map(q).join(", ");
  const id = q(c.id);
  const keys = keyColumns(table).map(q);
  const attemptSet = c.attempt === undefined ? "" : `, ${q(c.attempt)} = ${q(c.attempt)} + 1`;
  return {
    claim:
      form === "advisory"
        ? `SELECT ${[id, ...keys].join(", ")} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT ?`
        : `SELECT ${read} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT 1 FOR UPDATE SKIP LOCKED`,
    nowCount,
    leaseTake:
      c.lockedUntil === undefined
        ? ""
        : `UPDATE ${t} SET ${q(c.lockedUntil)} = ?${attemptSet} WHERE ${id} = ?`,
    advisoryTake:
      c.attempt === undefined
        ? `SELECT ${id} FROM ${t} WHERE ${id} = ? AND ${where}`
        : `UPDATE ${t} SET ${q(c.attempt)} = ${q(c.attempt)} + 1 WHERE ${id} = ? AND ${where}`,
    read: `SELECT ${read} FROM ${t} WHERE ${id} = ?`,
    settle:
      form === "lease" && c.lockedUntil !== undefined
        ? `DELETE FROM ${t} WHERE ${id} = ? AND ${q(c.lockedUntil)} = ?`
        : `DELETE FROM ${t} WHERE ${id} = ?`,
  };
}

const getLockSql = "SELECT GET_LOCK(?, 0) AS locked";
const releaseLockSql = "SELECT RELEASE_LOCK(?) AS released";

/** The lock name of a key: the database's name lower-cased, `.`, the key; its SHA-256 past 64 characters. */
function lockName(database: string, key: string): string {
  const name = `${database.toLowerCase()}.${key}`;
  return name.length > 64 ? createHash("sha256").update(name).digest("hex") : name;
}

/** Opens the hand-written loop of `options.form` on the MySQL/MariaDB database at `url`. */
export async function openMysqlLoop(url: string, options: LoopOptions): Promise<HandWrittenLoop> {
  const { table, form } = options;
  let handler = options.handler ?? asyncNoOpHandler;
  const mysql = await loadForDialect("mysql", () => import("mysql2/promise"));
  const pool: Pool = mysql.createPool({
    uri: url,
    connectionLimit: options.connections,
    timezone: "Z",
    supportBigNumbers: true,
    dateStrings: false,
  });
  const sql = statements(table, form);
  const database = table.schema ?? decodeURIComponent(new URL(url).pathname.replace(/^\//, ""));
  const { id: idColumn, payload } = table.columns;
  const nows = (): Date[] => {
    const now = new Date();
    return Array.from({ length: sql.nowCount }, () => now);
  };

  const rowLockStep = async (connection: PoolConnection): Promise<boolean> => {
    await connection.query("START TRANSACTION");
    try {
      const [rows] = await connection.query<RowDataPacket[]>(sql.claim, nows());
      const row = rows[0];
      if (row === undefined) {
        await connection.query("COMMIT");
        return false;
      }
      await handler(row[payload]);
      await connection.query(sql.settle, [row[idColumn]]);
      await connection.query("COMMIT");
      return true;
    } catch (error) {
      await connection.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
  };

  const leaseStep = async (connection: PoolConnection): Promise<boolean> => {
    const expiry = leaseExpiry(table);
    await connection.query("START TRANSACTION");
    let row: RowDataPacket | undefined;
    try {
      const [rows] = await connection.query<RowDataPacket[]>(sql.claim, nows());
      row = rows[0];
      if (row !== undefined) await connection.query(sql.leaseTake, [expiry, row[idColumn]]);
      await connection.query("COMMIT");
    } catch (error) {
      await connection.query("ROLLBACK").catch(() => undefined);
      throw error;
    }
    if (row === undefined) return false;
    await handler(row[payload]);
    await connection.query(sql.settle, [row[idColumn], expiry]);
    return true;
  };

  const advisoryStep = async (
    connection: PoolConnection,
    worker: number,
    workers: number,
  ): Promise<boolean> => {
    for (;;) {
      const [candidates] = await connection.query<RowDataPacket[]>(sql.claim, [...nows(), workers * 2]);
      if (candidates.length === 0) return false;
      for (let index = 0; index < candidates.length; index += 1) {
        const candidate = candidates[(worker + index) % candidates.length] as RowDataPacket;
        const name = lockName(database, renderKey(table, candidate));
        const [locked] = await connection.query<RowDataPacket[]>(getLockSql, [name]);
        if (Number(locked[0]?.locked) !== 1) continue;
        try {
          const id = candidate[idColumn];
          const [taken] = await connection.query<ResultSetHeader>(sql.advisoryTake, [id, ...nows()]);
          if (taken.affectedRows === 0) continue;
          const [rows] = await connection.query<RowDataPacket[]>(sql.read, [id]);
          await handler(rows[0]?.[payload]);
          await connection.query(sql.settle, [id]);
          return true;
        } finally {
          await connection.query(releaseLockSql, [name]);
        }
      }
    }
  };

  return {
    async drain(workers, given, claiming) {
      handler = given ?? options.handler ?? asyncNoOpHandler;
      const connections = await Promise.all(Array.from({ length: workers }, () => pool.getConnection()));
      try {
        for (const connection of connections) {
          await connection.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
          await connection.query("SET time_zone = '+00:00'");
        }
        return await runLoops(
          workers,
          (worker) => {
            const connection = connections[worker] as PoolConnection;
            if (form === "rowLock") return rowLockStep(connection);
            if (form === "lease") return leaseStep(connection);
            return advisoryStep(connection, worker, workers);
          },
          claiming,
        );
      } finally {
        for (const connection of connections) connection.release();
      }
    },
    async close() {
      await pool.end();
    },
  };
}
