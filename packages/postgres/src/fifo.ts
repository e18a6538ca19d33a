/**
 * The FIFO group guard, a transaction advisory lock taken before the claim (DRIVERS.md, "FIFO groups").
 *
 * @module
 */
import type { TableDefinition } from "@rowclaim/core";

/** The guard's key: `<schema.table>:<group>` (`<schema.table>` alone for rows without a group). */
export function fifoGroupKey(table: TableDefinition, group: string | null): string {
  const qualified = table.schema === undefined ? table.name : `${table.schema}.${table.name}`;
  return group === null ? qualified : `${qualified}:${group}`;
}
