/**
 * What every claimer of a subscription is built from, once, when the subscription opens.
 *
 * @module
 */
import type { Logger, TableDefinition } from "@rowclaim/core";
import type { PoolLike } from "./pool-like.js";
import type { TableStatements } from "./sql.js";
import type { ServerFamily } from "./version.js";

/** A subscription's table, statements and pool. */
export interface ClaimerContext {
  readonly pool: PoolLike;
  readonly family: ServerFamily;
  readonly table: TableDefinition;
  readonly statements: TableStatements;
  readonly logger: Logger;
}
