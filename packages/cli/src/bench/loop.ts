/**
 * The hand-written loop `rowclaim bench` measures each form against: the statements a user would
 * write without rowclaim (the same claim and settlement as the form, one row a claim), run as
 * `workers` concurrent loops, each on a connection of its own. The statements of each database
 * are in one module per dialect (`postgres-loop.ts`, `mysql-loop.ts`, `sqlite-loop.ts`).
 *
 * @module
 */
import type { ClaimFormName, TableDefinition } from "@rowclaim/core";
import { loadForDialect } from "../driver-packages.js";
import type { Target } from "../target.js";

/** A hand-written claim-handle-settle loop over one table. */
export interface HandWrittenLoop {
  /**
   * Runs `workers` loops at once until none finds a row to claim, each row through `handler`
   * (else the loop's own, `LoopOptions.handler`); resolves how many rows they settled.
   * `claiming` is called once, after the drain's connections are set up and just before the
   * loops send their first claims (where a benchmark starts its clock).
   */
  drain(workers: number, handler?: LoopHandler, claiming?: () => void): Promise<number>;
  /** Closes the loop's connections. */
  close(): Promise<void>;
}

/** A loop's handler: takes a claimed row's payload; a loop awaits what it returns. */
export type LoopHandler = (payload: unknown) => Promise<void> | undefined;

/** What every dialect's loop is opened with. */
export interface LoopOptions {
  /** The table, in the command line's standard layout (see `tables.ts`). */
  readonly table: TableDefinition;
  /** The form whose statements the loop runs. */
  readonly form: ClaimFormName;
  /** The most loops a drain will run at once (each holds a connection). */
  readonly connections: number;
  /** What the loop does with each claimed row ({@link asyncNoOpHandler} unless given). */
  readonly handler?: LoopHandler;
  /** SQLite only: the connection's `synchronous` level (`"full"`, the driver's default, unless given). */
  readonly synchronous?: "full" | "normal";
}

/** The job's work in the bench: nothing, awaited as a real handler awaits its own. */
export async function noOpWork(_payload: unknown): Promise<void> {}

/**
 * The bench's handler, on both sides: `async (payload) => { await work(payload) }` with `work` an
 * async no-op, the shape every real handler has.
 */
export const asyncNoOpHandler: LoopHandler = async (payload) => {
  await noOpWork(payload);
};

/**
 * Runs `workers` copies of `step` at once, each until it returns `false` (it found no row);
 * resolves the number of `true` results (rows settled). Calls `claiming` first.
 */
export async function runLoops(
  workers: number,
  step: (worker: number) => Promise<boolean>,
  claiming?: () => void,
): Promise<number> {
  claiming?.();
  let settled = 0;
  const loops = Array.from({ length: workers }, async (_, worker) => {
    while (await step(worker)) settled += 1;
  });
  await Promise.all(loops);
  return settled;
}

/**
 * The advisory key of a row, rendered from the table's key template in JavaScript (literal
 * parts as written, column parts as text, NULL as the empty string), as the drivers render it.
 */
export function renderKey(table: TableDefinition, row: Readonly<Record<string, unknown>>): string {
  const parts = table.advisoryKey?.parts ?? [];
  return parts
    .map((part) => {
      if ("literal" in part) return part.literal;
      const value = row[part.column];
      return value === null || value === undefined ? "" : String(value);
    })
    .join("");
}

/** The columns an advisory key names, in order (no duplicates). */
export function keyColumns(table: TableDefinition): string[] {
  const columns: string[] = [];
  for (const part of table.advisoryKey?.parts ?? []) {
    if ("column" in part && !columns.includes(part.column)) columns.push(part.column);
  }
  return columns;
}

/**
 * A lease expiry as the host computes it: now plus the lease, rounded up to a whole second
 * (so every column type holds the token exactly).
 */
export function leaseExpiry(table: TableDefinition, now = Date.now()): Date {
  return new Date(Math.ceil((now + table.leaseSeconds * 1000) / 1000) * 1000);
}

/** Opens the hand-written loop of `options.form` on `target`'s database. */
export async function openHandWrittenLoop(target: Target, options: LoopOptions): Promise<HandWrittenLoop> {
  switch (target.dialect) {
    case "postgres": {
      const { openPostgresLoop } = await loadForDialect("postgres", () => import("./postgres-loop.js"));
      return openPostgresLoop(target.url, options);
    }
    case "mysql": {
      const { openMysqlLoop } = await loadForDialect("mysql", () => import("./mysql-loop.js"));
      return openMysqlLoop(target.url, options);
    }
    case "sqlite": {
      const { openSqliteLoop } = await loadForDialect("sqlite", () => import("./sqlite-loop.js"));
      return openSqliteLoop(target.filename, options);
    }
  }
}
