/**
 * A short piece of work on one connection of a driver's pool, written once: acquire, optionally
 * `BEGIN` … `COMMIT` (or `ROLLBACK` on a failure), release, and the failure turned into the
 * driver's error for the table. What differs between clients is the few calls of
 * {@link ConnectionSession}; the operations, status and ledger runners of a driver share them.
 *
 * @module
 */

/** How a driver's client holds one connection for a short piece of work. */
export interface ConnectionSession<C> {
  /** Checks a connection out of the pool. Its failure is thrown as it is. */
  acquire(): Promise<C>;
  /** Starts a transaction on `connection`. */
  begin(connection: C): Promise<unknown>;
  /** Commits it. */
  commit(connection: C): Promise<unknown>;
  /** Rolls it back; a failure here marks the connection broken. */
  rollback(connection: C): Promise<unknown>;
  /** Gives the connection back: `broken` when a rollback failed and the pool should drop it. */
  release(connection: C, broken: boolean): void;
}

/** How {@link onConnection} runs the work. */
export interface ConnectionWorkOptions {
  /** Whether the work runs in one transaction (committed when it returns, rolled back when it throws). */
  readonly transaction: boolean;
  /** The error to throw for a failure of the work or of its transaction (the driver's normalisation, with the table's context). */
  readonly fail: (error: unknown) => unknown;
}

/** Runs `work` on a connection of `session`, in a transaction when asked, and releases the connection. */
export async function onConnection<C, T>(
  session: ConnectionSession<C>,
  work: (connection: C) => Promise<T>,
  options: ConnectionWorkOptions,
): Promise<T> {
  const connection = await session.acquire();
  let broken = false;
  try {
    if (options.transaction) await session.begin(connection);
    const result = await work(connection);
    if (options.transaction) await session.commit(connection);
    return result;
  } catch (error) {
    if (options.transaction)
      await session.rollback(connection).catch(() => {
        broken = true;
      });
    throw options.fail(error);
  } finally {
    session.release(connection, broken);
  }
}
