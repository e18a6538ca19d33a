/**
 * The transactional-handler algorithm, written once for every driver whose client runs
 * statements on a held connection ({@link TransactionSession}):
 *
 * - Row lock form: the body behind a savepoint on the claim's open transaction; a body that throws
 *   rolls back to it, and the settlement runs inside the same transaction.
 * - Lease form: a transaction on a connection of its own; the settlement is fenced by the token
 *   the delivery holds once the body is done, and a fence that matches no row rolls everything
 *   back (`LEASE_LOST`). Given up while the body runs, the connection is dropped, so that the
 *   body's next statement fails instead of running outside the transaction.
 * - Advisory lock form: a transaction on the key's session; a body that throws rolls back and
 *   keeps the key, anything after it rolls back and releases.
 *
 * @module
 */
import { LeaseLostError } from "./errors.js";
import type { RowId } from "./rows.js";
import type { Settlement } from "./settlement.js";
import type { TableDefinition } from "./table.js";
import type { LeaseToken } from "./tokens.js";
import type { TransactionDialect, TransactionSession } from "./transaction-session.js";
import type { TransactionWork } from "./transaction-work.js";

/** Clients on which a transactional body is running now. */
const running = new WeakSet<object>();

/**
 * Whether a transactional body is running on `client` now. A claimer giving such a connection
 * up (the broker closing past its timeout) ends its session rather than roll back or unlock on
 * it: the body's later statements must fail, not run outside the transaction.
 */
export function bodyRunning(client: object): boolean {
  return running.has(client);
}

/** The row a transactional handler settles. */
export interface TransactionTarget {
  readonly table: TableDefinition;
  readonly id: RowId;
}

/** The `LEASE_LOST` of a transactional lease settlement whose fence matched no row. */
export function transactionalLeaseLost(
  table: TableDefinition,
  id: RowId,
  expiry: Date | undefined,
  kind: Settlement["kind"] | "settlement",
): LeaseLostError {
  return new LeaseLostError(
    `Table "${table.name}" (lease form): row ${String(id)} no longer holds this delivery's lease (expiry ${expiry?.toISOString() ?? "?"}), so the transactional handler's writes and its ${kind} settlement were rolled back. The lease ran out and another claim took the row, or the row is gone. Make the lease longer than the handler can stall, or keep lease extension on.`,
    { table: table.name },
  );
}

/** The `LEASE_LOST` of a transactional advisory lock settlement that found its row gone or finished. */
export function transactionalRowGone(
  table: TableDefinition,
  id: RowId,
  kind: Settlement["kind"] | "settlement",
  key?: string,
): LeaseLostError {
  return new LeaseLostError(
    `Table "${table.name}" (advisory lock form): the transactional ${kind} settlement of row ${String(id)} found the row gone or finished while its key${key === undefined ? "" : ` "${key}"`} was held (deleted or settled by hand?); the handler's writes were rolled back.`,
    { table: table.name },
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Runs `sql` quietly; a failure marks the session broken. */
async function quietly(session: TransactionSession, sql: string): Promise<void> {
  await session.text(sql).catch((error: unknown) => session.markBroken(asError(error)));
}

/** Runs the body, tracked by its client; on failure runs `undo` (quietly) and rethrows the body's error unchanged. */
async function runBody(
  session: TransactionSession,
  work: TransactionWork,
  undo?: string,
): Promise<Settlement> {
  running.add(session.client);
  try {
    return await work(session.client);
  } catch (error) {
    if (undo !== undefined && !session.broken && !session.released) await quietly(session, undo);
    throw error;
  } finally {
    running.delete(session.client);
  }
}

/** Runs `step`, turning its failure into the driver's error. */
async function step<S extends TransactionSession, T>(
  dialect: TransactionDialect<S>,
  name: Parameters<TransactionDialect<S>["normalize"]>[1],
  settlement: Settlement | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw dialect.normalize(error, name, settlement);
  }
}

/** Commits; a failed commit marks the session broken (its state is not known). */
async function commit<S extends TransactionSession>(
  session: S,
  dialect: TransactionDialect<S>,
  settlement: Settlement,
): Promise<void> {
  try {
    await session.text(dialect.commit);
  } catch (error) {
    session.markBroken(asError(error));
    throw dialect.normalize(error, "commit", settlement);
  }
}

/**
 * Row lock form: the body and its settlement inside the batch's transaction, behind a savepoint.
 * A body that throws rolls back to the savepoint; its error is rethrown unchanged.
 */
export async function runRowLockTransaction<S extends TransactionSession>(
  session: S,
  dialect: TransactionDialect<S>,
  work: TransactionWork,
): Promise<void> {
  await step(dialect, "savepoint", undefined, () => session.text(dialect.savepoint));
  const settlement = await runBody(session, work, dialect.rollbackToSavepoint);
  await step(dialect, "settle", settlement, () => dialect.apply(session, settlement, undefined));
  await step(dialect, "releaseSavepoint", settlement, () => session.text(dialect.releaseSavepoint));
}

/**
 * Lease form: a transaction on a connection of its own, the body, then the settlement fenced by
 * the token `fence` gives, then `COMMIT`. A row that holds another token rolls back and throws
 * `LEASE_LOST`. Once `signal` aborts while the body runs, the connection is dropped, and the
 * failure that follows is reported as the abort's reason.
 */
export async function runLeaseTransaction<S extends TransactionSession>(
  acquire: () => Promise<S>,
  dialect: TransactionDialect<S>,
  target: TransactionTarget,
  work: TransactionWork,
  fence: () => Promise<LeaseToken>,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) throw signal.reason;
  const session = await step(dialect, "acquire", undefined, acquire);
  const giveUp = (): void => {
    if (!running.has(session.client)) return;
    session.markBroken(signal.reason instanceof Error ? signal.reason : new Error("given up"));
    session.release();
  };
  signal.addEventListener("abort", giveUp, { once: true });
  let committed = false;
  try {
    await step(dialect, "begin", undefined, () => dialect.begin(session, "lease"));
    let settlement: Settlement;
    let token: LeaseToken;
    try {
      settlement = await runBody(session, work);
      token = await fence();
    } catch (error) {
      // Cut off by the abort: say why (CLOSED, LEASE_LOST) rather than how the session ended.
      throw signal.aborted ? signal.reason : error;
    }
    const changed = await step(dialect, "settle", settlement, () =>
      dialect.apply(session, settlement, token.expiry),
    );
    if (changed === 0) throw transactionalLeaseLost(target.table, target.id, token.expiry, settlement.kind);
    await commit(session, dialect, settlement);
    committed = true;
  } finally {
    signal.removeEventListener("abort", giveUp);
    // One rollback, whatever failed (the body, the fence, the settlement, LEASE_LOST).
    if (!committed && !session.released && !session.broken) await quietly(session, dialect.rollback);
    session.release();
  }
}

/**
 * Advisory lock form: a transaction on the key's session, the body, the settlement, `COMMIT`,
 * then `release` (unlock and give the connection back). A body that throws rolls back and keeps
 * the key and the connection; its error is rethrown unchanged. Any other failure rolls back,
 * releases and throws.
 */
export async function runAdvisoryTransaction<S extends TransactionSession>(
  session: S,
  dialect: TransactionDialect<S>,
  target: TransactionTarget & { readonly key: string },
  work: TransactionWork,
  release: () => Promise<void>,
): Promise<void> {
  try {
    await dialect.begin(session, "advisory");
  } catch (error) {
    await release().catch(() => undefined);
    throw dialect.normalize(error, "begin", undefined);
  }
  const settlement = await runBody(session, work, dialect.rollback);
  let failure: unknown;
  let committed = false;
  try {
    const changed = await step(dialect, "settle", settlement, () =>
      dialect.apply(session, settlement, undefined),
    );
    if (changed === 0) throw transactionalRowGone(target.table, target.id, settlement.kind, target.key);
    await commit(session, dialect, settlement);
    committed = true;
  } catch (error) {
    failure = error;
  }
  if (!committed && !session.broken) await quietly(session, dialect.rollback);
  try {
    await release();
  } catch (error) {
    failure ??= error;
  }
  if (failure !== undefined) throw failure;
}
