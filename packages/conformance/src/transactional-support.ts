/**
 * What the transactional handler tests share between the suite and its child runner
 * (`transactional-child.ts`): the child's configuration, and what a harness's
 * `childDriverModule` exports for these tests.
 *
 * @module
 */
import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import type { Driver, TableDescription } from "@rowclaim/core";

/** What the parent tells a transactional child. */
export interface TransactionalChildConfig {
  /** The harness's `childDriverModule`. */
  readonly driverModule: string;
  /** The queue table's description. */
  readonly table: TableDescription;
  /** The side table's name: columns `job` and `worker`. */
  readonly side: string;
  /** What this process writes into `worker`. */
  readonly worker: string;
  /** Subscription options. */
  readonly subscribe: { readonly workers?: number; readonly batch?: number; readonly pollInterval?: number };
  /** Each handler first waits a random time up to this many milliseconds (outside any transaction), so that kills spread over many rounds. */
  readonly paceMs?: number;
  /** Wait for this file to exist before settling each delivery (see the module's note). */
  readonly holdFile?: string;
}

/** What a `childDriverModule` exports for the transactional handler tests. */
export interface TransactionalDriverModule {
  createDriver(): Driver | Promise<Driver>;
  /** Inserts `(job, worker)` into side table `table` with the client a transactional body receives. */
  insertSideRow?(client: unknown, table: string, job: string, worker: string): unknown;
  /** `"sync"` where transactional bodies must be synchronous (SQLite). Default `"async"`. */
  readonly transactionBodies?: "sync" | "async";
}

/** Imports a `childDriverModule` (an absolute path or a URL). */
export async function importDriverModule(specifier: string): Promise<TransactionalDriverModule> {
  const url = isAbsolute(specifier) ? pathToFileURL(specifier).href : specifier;
  return (await import(url)) as TransactionalDriverModule;
}
