/**
 * The row lock probe (`skipLocked`) of every driver that offers the row lock form: connection A
 * locks a row of the subscribed table `FOR UPDATE` in a transaction, and connection B's
 * `FOR UPDATE SKIP LOCKED` of that row must find nothing. The algorithm is here; the statements
 * and the connections are the driver's ({@link RowLockProbeSession}).
 *
 * @module
 */

/** What the row lock probe runs on, as a driver gives it. */
export interface RowLockProbeSession<C> {
  /** Checks out connection A (failures are thrown: the probe decides nothing). */
  readonly acquire: () => Promise<C>;
  /** Checks out connection B, or `undefined` when the pool gives none in time (a pool of one). */
  readonly second: () => Promise<C | undefined>;
  /** Begins a transaction on A. */
  readonly begin: (connection: C) => Promise<void>;
  /** Locks the table's first row `FOR UPDATE SKIP LOCKED` on A: its id, or `undefined` for an empty table. */
  readonly lockFirstRow: (connection: C) => Promise<{ readonly id: unknown } | undefined>;
  /** Whether B's `FOR UPDATE SKIP LOCKED` of the row `id` found nothing. */
  readonly skipsLocked: (connection: C, id: unknown) => Promise<boolean>;
  /** Rolls A's transaction back. */
  readonly rollback: (connection: C) => Promise<void>;
  /** Gives a connection back; `broken` when its rollback failed (destroy it rather than reuse it). */
  readonly release: (connection: C, broken: boolean) => void;
  /**
   * `true` for an error the server answered with (it refuses the clause: it does not keep the
   * form's row locks); throws an error that decides nothing (a lost connection).
   */
  readonly refusedByServer: (error: unknown) => boolean;
}

/**
 * Runs the row lock probe: `true` where B skipped A's locked row, `false` where it did not (or
 * the server refused the clause), `undefined` where it could not decide (an empty table, no
 * second connection).
 *
 * @throws the error `session.refusedByServer` rethrows (a lost connection), or A's checkout's.
 */
export async function probeRowLocks<C>(session: RowLockProbeSession<C>): Promise<boolean | undefined> {
  const a = await session.acquire();
  let b: C | undefined;
  let broken = false;
  try {
    await session.begin(a);
    try {
      const held = await session.lockFirstRow(a);
      if (held === undefined) return undefined;
      b = await session.second();
      if (b === undefined) return undefined;
      return await session.skipsLocked(b, held.id);
    } catch (error) {
      // A server that refuses FOR UPDATE SKIP LOCKED does not keep the form's row locks.
      return !session.refusedByServer(error);
    } finally {
      broken = await session.rollback(a).then(
        () => false,
        () => true,
      );
    }
  } finally {
    if (b !== undefined) session.release(b, false);
    session.release(a, broken);
  }
}
