/**
 * What every claimer of a subscription is built from, once, when the subscription opens.
 *
 * @module
 */
import type { Logger, TableDefinition } from "@rowclaim/core";
import type { PoolLike } from "./client.js";
import type { TableStatements } from "./sql.js";

/** A subscription's table, statements and pool. */
export interface ClaimerContext {
  readonly pool: PoolLike;
  readonly table: TableDefinition;
  readonly statements: TableStatements;
  readonly logger: Logger;
}
