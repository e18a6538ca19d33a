/**
 * The FIFO group guard: a transaction advisory lock on the hash of the table and the group, taken
 * in the claim's transaction before it selects the group's head. In the row lock form the claim's
 * transaction stays open while the handler runs, so the lock held says "the group is in work"
 * and another claim passes (`pg_try_advisory_xact_lock`). In the lease form the claim commits at
 * once and "in work" is a lease that has not run out; there the lock only orders concurrent
 * claims, so a claim waits the few milliseconds for the other to commit (`pg_advisory_xact_lock`).
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
