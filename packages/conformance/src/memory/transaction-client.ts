/**
 * The client a transactional handler's body gets on the memory driver: its statements (those
 * `executeSql` runs) are kept and run when the body's transaction commits, with the settlement;
 * a body that throws, or a transaction that rolls back, runs none of them.
 *
 * @module
 */
import { ClosedError } from "@rowclaim/core";
import { executeSql } from "./statements.js";
import type { MemoryDatabase } from "./store.js";

/** What a transactional body receives on the memory driver. */
export class MemoryTransactionClient {
  readonly #database: MemoryDatabase;
  readonly #statements: string[] = [];
  readonly #signal: AbortSignal | undefined;

  constructor(database: MemoryDatabase, signal?: AbortSignal) {
    this.#database = database;
    this.#signal = signal;
  }

  /**
   * Runs `sql` (what `executeSql` takes) when the transaction commits.
   *
   * @throws {ClosedError} once the transaction's session was ended (the delivery given up or its lease lost).
   */
  execute(sql: string): void {
    if (this.#signal?.aborted === true) {
      throw new ClosedError(
        "memory database: this transaction's session was ended; the statement did not run.",
      );
    }
    this.#statements.push(sql);
  }

  /** The writes of the body's statements, for the commit. */
  writes(): (() => void)[] {
    return this.#statements.map((sql) => () => executeSql(this.#database, sql));
  }
}
