/**
 * The FIFO group guard, a transaction advisory lock taken before the claim (DRIVERS.md, "FIFO groups").
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";
import type { HeldConnection } from "./connection.js";
import { fifoTryGuard, fifoWaitGuard } from "./sql.js";

/** The guard's key: `<schema.table>:<group>` (`<schema.table>` alone for rows without a group). */
export function fifoGroupKey(table: TableDefinition, group: string | null): string {
  const qualified = table.schema === undefined ? table.name : `${table.schema}.${table.name}`;
  return group === null ? qualified : `${qualified}:${group}`;
}

/** Tries the group's guard in the open transaction; `false` when another transaction holds it. */
export async function tryFifoGuard(connection: HeldConnection, key: string): Promise<boolean> {
  const result = await connection.run(fifoTryGuard, { key });
  return result.rows[0]?.locked === true;
}

/** Takes the group's guard in the open transaction, waiting for a concurrent claim to commit. */
export async function waitFifoGuard(connection: HeldConnection, key: string): Promise<void> {
  await connection.run(fifoWaitGuard, { key });
}
