/**
 * The hand-written loop on SQLite (`better-sqlite3`): every statement `rowclaim bench` compares a
 * form with, written as a user would write it without rowclaim, one row a claim, on a connection
 * of the loop's own (WAL mode and `synchronous = FULL`, as the driver opens a file, or the level
 * `LoopOptions.synchronous` names; better-sqlite3 runs each statement to the end, so the loops take
 * turns on it). Every identifier is quoted; values travel as parameters. Each statement is prepared
 * once per drain and autocommits: a lease job costs two commits (two WAL syncs at `FULL`), the
 * least a claim and a separate fenced settlement can cost, and nothing else runs between them.
 *
 * - lease: `UPDATE … SET locked_until, attempt + 1 WHERE id IN (SELECT … LIMIT 1) RETURNING`, the
 *   handler, `DELETE … WHERE id AND locked_until = token`;
 * - advisory: keys held in the process; a `SELECT` of due rows with their keys, the first whose key
 *   no loop holds, `UPDATE … SET attempt + 1 WHERE id AND due RETURNING`, the handler,
 *   `DELETE … WHERE id`.
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import Database from "better-sqlite3";
import {
  asyncNoOpHandler,
  type HandWrittenLoop,
  keyColumns,
  type LoopOptions,
  leaseExpiry,
  renderKey,
  runLoops,
} from "./loop.js";

/** Quotes an SQLite identifier. */
function q(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function statements(table: TableDefinition): {
  claim: string;
  candidates: string;
  take: string;
  settle: string;
} {
  const c = table.columns;
  const t = table.schema === undefined ? q(table.name) : `${q(table.schema)}.${q(table.name)}`;
  const due: string[] = [];
  if (c.group !== undefined) due.push(`${q(c.group)} IS NULL`);
  if (c.processedAt !== undefined) due.push(`${q(c.processedAt)} IS NULL`);
  if (c.runAt !== undefined) due.push(`(${q(c.runAt)} IS NULL OR ${q(c.runAt)} <= @now)`);
  if (c.lockedUntil !== undefined) due.push(`(${q(c.lockedUntil)} IS NULL OR ${q(c.lockedUntil)} <= @now)`);
  const where = due.length === 0 ? "1" : due.join(" AND ");
  const order = [c.priority, c.runAt, c.id]
    .filter((column): column is string => column !== undefined)
    .map(q)
    .join(", ");
  const id = q(c.id);
  const read = [c.id, c.payload, ...(c.attempt === undefined ? [] : [c.attempt])].map(q).join(", ");
  const attemptSet = c.attempt === undefined ? "" : `, ${q(c.attempt)} = ${q(c.attempt)} + 1`;
  return {
    claim:
      c.lockedUntil === undefined
        ? ""
        : `UPDATE ${t} SET ${q(c.lockedUntil)} = @expiry${attemptSet} WHERE ${id} IN (SELECT ${id} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT 1) RETURNING ${read}`,
    candidates: `SELECT ${[id, ...keyColumns(table).map(q)].join(", ")} FROM ${t} WHERE ${where} ORDER BY ${order} LIMIT @window`,
    take:
      c.attempt === undefined
        ? `SELECT ${read} FROM ${t} WHERE ${id} = @id AND ${where}`
        : `UPDATE ${t} SET ${q(c.attempt)} = ${q(c.attempt)} + 1 WHERE ${id} = @id AND ${where} RETURNING ${read}`,
    settle:
      c.lockedUntil === undefined
        ? `DELETE FROM ${t} WHERE ${id} = @id`
        : `DELETE FROM ${t} WHERE ${id} = @id AND ${q(c.lockedUntil)} = @token`,
  };
}

/** Opens the hand-written loop of `options.form` on the SQLite file `filename`. */
export async function openSqliteLoop(filename: string, options: LoopOptions): Promise<HandWrittenLoop> {
  const { table, form } = options;
  let handler = options.handler ?? asyncNoOpHandler;
  const db = new Database(filename, { timeout: 5000 });
  db.pragma("journal_mode = WAL");
  // As durable as the driver's commits (its default, `synchronous: "full"`, or the level asked for):
  // the same statements at the same cost of a commit.
  db.pragma(options.synchronous === "normal" ? "synchronous = NORMAL" : "synchronous = FULL");
  const sql = statements(table);
  const { id: idColumn, payload } = table.columns;
  // Prepared at the first drain: the bench creates the table after it opens the loop.
  let prepared: Record<"claim" | "candidates" | "take" | "settle", Database.Statement> | undefined;
  const statement = (name: "claim" | "candidates" | "take" | "settle"): Database.Statement => {
    prepared ??= {
      claim: db.prepare(form === "lease" ? sql.claim : "SELECT 1"),
      candidates: db.prepare(form === "advisory" ? sql.candidates : "SELECT 1"),
      take: db.prepare(form === "advisory" ? sql.take : "SELECT 1"),
      settle: db.prepare(sql.settle),
    };
    return prepared[name];
  };
  const held = new Set<string>();

  const leaseStep = async (): Promise<boolean> => {
    const now = Date.now();
    const expiry = leaseExpiry(table, now).getTime();
    const row = statement("claim").get({ now, expiry }) as Record<string, unknown> | undefined;
    if (row === undefined) return false;
    await handler(row[payload]);
    statement("settle").run({ id: row[idColumn], token: expiry });
    return true;
  };

  const advisoryStep = async (workers: number): Promise<boolean> => {
    for (;;) {
      const found = statement("candidates").all({ now: Date.now(), window: workers * 2 }) as Record<
        string,
        unknown
      >[];
      if (found.length === 0) return false;
      let free = false;
      for (const candidate of found) {
        const key = renderKey(table, candidate);
        if (held.has(key)) continue;
        free = true;
        held.add(key);
        try {
          const row = statement("take").get({ id: candidate[idColumn], now: Date.now() }) as
            | Record<string, unknown>
            | undefined;
          if (row === undefined) continue;
          await handler(row[payload]);
          statement("settle").run({ id: row[idColumn] });
          return true;
        } finally {
          held.delete(key);
        }
      }
      // Every candidate's key is held by another loop of this process: let them settle first.
      if (!free) await new Promise((resolve) => setImmediate(resolve));
    }
  };

  return {
    async drain(workers, given, claiming) {
      handler = given ?? options.handler ?? asyncNoOpHandler;
      // A table dropped and created again since the last drain needs its statements prepared again.
      prepared = undefined;
      return runLoops(workers, () => (form === "lease" ? leaseStep() : advisoryStep(workers)), claiming);
    },
    async close() {
      db.close();
    },
  };
}
