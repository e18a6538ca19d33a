/**
 * The seam between core's transactional-handler algorithm (`transactional-runner.ts`) and a
 * driver's client: the connection a body's transaction runs on, and the dialect's statements.
 *
 * @module
 */
import type { Settlement } from "./settlement.js";

/** One connection a transactional handler's transaction runs on, as the driver's client holds it. */
export interface TransactionSession {
  /** What the body receives: the driver's own client. Running bodies are tracked by it ({@link bodyRunning}). */
  readonly client: object;
  /** Runs a control statement (`SAVEPOINT …`, `COMMIT`, `ROLLBACK`). */
  text(sql: string): Promise<unknown>;
  /** Whether the connection must not be used again (it broke, or a rollback on it failed). */
  readonly broken: boolean;
  /** Marks the connection as not to be reused: released, the pool drops it. */
  markBroken(reason: Error): void;
  /** Whether the connection was given back. */
  readonly released: boolean;
  /** Gives the connection back to its pool, or has the pool drop it once broken. Idempotent. */
  release(): void;
}

/** The step of a transactional handler's run that failed, for the driver's error context. */
export type TransactionStep = "acquire" | "savepoint" | "begin" | "settle" | "releaseSavepoint" | "commit";

/** What a dialect and its client give the algorithm: control statements, the settlement, the error mapping. */
export interface TransactionDialect<S extends TransactionSession> {
  /** Opens the row lock body's savepoint. */
  readonly savepoint: string;
  /** Takes back a row lock body's writes. */
  readonly rollbackToSavepoint: string;
  /** Ends the savepoint once the settlement ran. */
  readonly releaseSavepoint: string;
  /** Ends a transaction. */
  readonly commit: string;
  /** Undoes a transaction. */
  readonly rollback: string;
  /** Starts the transaction of a lease body (on its own connection) or an advisory body (on the key's session). */
  begin(session: S, form: "lease" | "advisory"): Promise<unknown>;
  /** Runs the settlement inside the open transaction, fenced by `expiry` when given; the rows it changed (`null`: not known). */
  apply(session: S, settlement: Settlement, expiry: Date | undefined): Promise<number | null>;
  /** The driver's error for a failure of `step` (its normalisation, with the table's context). */
  normalize(error: unknown, step: TransactionStep, settlement: Settlement | undefined): unknown;
}
