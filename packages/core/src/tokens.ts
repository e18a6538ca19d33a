/**
 * Settlement tokens: what a claim hands back so that its rows can be settled, and only by it.
 * Each claim form holds a row by something different, and its token is that thing. Drivers
 * extend these interfaces with their own state (a connection, a transaction), and their form
 * interfaces take their own token type, so a settlement can only be made with the token its
 * claim gave.
 *
 * @module
 */

/**
 * The lease form's token: the expiry written into `lockedUntil`. A settlement or extension
 * takes effect only while the row still holds exactly this expiry.
 */
export interface LeaseToken {
  readonly form: "lease";
  /** The expiry this delivery holds, a whole second of the host's clock. */
  readonly expiry: Date;
}

/**
 * The row lock form's token: the open transaction that locked the claim's rows. Every row of a
 * batch shares it; it ends with the batch's commit or rollback.
 */
export interface RowLockToken {
  readonly form: "rowLock";
}

/**
 * The advisory lock form's token: the session (connection) that holds the key's lock, and the
 * key. The delivery settles on that connection and then unlocks.
 */
export interface AdvisoryToken {
  readonly form: "advisory";
  /**
   * The key whose lock the delivery holds: the rendered key, as the database rendered it from
   * the row, or, where the table's `advisoryLock.limit` is above 1, the lock key of the slot it
   * holds (`advisorySlotKey`). A driver may hold it in its own form (a hash, a lock name).
   */
  readonly key: string;
}

/** Any settlement token. */
export type SettlementToken = LeaseToken | RowLockToken | AdvisoryToken;

/**
 * Rounds a time up to the next whole second (a time already on a whole second stays). Lease
 * expiries are whole seconds so that every column type holds them exactly.
 */
export function ceilToSecond(time: number): Date {
  return new Date(Math.ceil(time / 1000) * 1000);
}

/** The lease expiry for a claim or an extension made at `now`: `now + lease`, rounded up to a whole second. */
export function leaseExpiry(now: Date, leaseSeconds: number): Date {
  return ceilToSecond(now.getTime() + leaseSeconds * 1000);
}
