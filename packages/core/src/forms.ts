/**
 * The claim-form interfaces a driver implements, one per form. The broker opens one claimer per
 * subscription with {@link Driver.open}; statements are built then, once, not per message.
 *
 * @module
 */
import type { ClaimedRow, RowId } from "./rows.js";
import type { AckSettlement, Settlement } from "./settlement.js";
import type { AdvisoryToken, LeaseToken, RowLockToken } from "./tokens.js";
import type { TransactionWork } from "./transactional.js";

/**
 * The most settlements the broker passes to one `settleMany` call: bounded so that one
 * statement's parameters stay within every database's limits (MySQL and SQLite count
 * placeholders) and one commit stays short.
 */
export const MAX_COALESCED_SETTLEMENTS = 500;

/** What every claim is asked for. */
export interface ClaimRequest {
  /** At most this many rows. FIFO claims take at most one (the head of the group). */
  readonly limit: number;
  /** The host's clock at the claim: rows due at or before it are claimable. */
  readonly now: Date;
}

/** A lease claim's request: the expiry to write, a whole second computed by the host. */
export interface LeaseClaimRequest extends ClaimRequest {
  readonly expiry: Date;
}

/** One claimed row and the token that settles it. */
export interface Claimed<T> {
  readonly row: ClaimedRow;
  readonly token: T;
}

/** A row lock claim: the rows its transaction locked, and the transaction as their token. */
export interface RowLockBatch<T extends RowLockToken = RowLockToken> {
  readonly rows: readonly ClaimedRow[];
  readonly token: T;
}

/** Methods every claimer has. */
interface ClaimerBase {
  /**
   * Releases what the claimer itself holds (prepared statements, a claim connection). Tokens in
   * work are settled or released by the broker before it calls this.
   */
  close(): Promise<void>;
}

/**
 * The row lock form: `BEGIN; SELECT … FOR UPDATE SKIP LOCKED`, the transaction held while the
 * handlers run, each settlement a statement inside it, then `COMMIT`.
 */
export interface RowLockClaimer<T extends RowLockToken = RowLockToken> extends ClaimerBase {
  readonly form: "rowLock";
  /** Opens a transaction and locks up to `limit` due rows; `null` (transaction ended) when none. */
  claim(request: ClaimRequest): Promise<RowLockBatch<T> | null>;
  /** Applies one row's settlement inside the batch's transaction; counts the attempt where the row stays. */
  settle(token: T, row: ClaimedRow, settlement: Settlement): Promise<void>;
  /**
   * Optional (coalesced settlements): applies one acknowledging settlement to several rows of
   * the batch as one statement inside the batch's transaction, exactly as {@link
   * RowLockClaimer.settle} would apply it to each (`markProcessed` counts the attempt). The
   * broker calls it once per batch, just before {@link RowLockClaimer.commit}, with every row
   * whose delivery acked; `rows` holds at least two rows. A failure (thrown) rolls the batch back
   * as a failed `settle` does. Left out, the broker settles each row with `settle`.
   */
  settleMany?(token: T, rows: readonly ClaimedRow[], settlement: AckSettlement): Promise<void>;
  /**
   * Optional (coalesced settlements): {@link RowLockClaimer.settleMany} (here for one row or
   * more) and {@link RowLockClaimer.commit} together, in as few round trips as the database
   * allows (PostgreSQL: both statements sent at once on a pipelined connection). The broker
   * prefers it to `settleMany` + `commit` when a batch ends with acks. Resolves once the batch
   * committed; a failure (thrown) means nothing of the batch was committed, the transaction
   * is over and its connection returned (the broker calls no `rollback` after it).
   */
  settleAndCommit?(token: T, rows: readonly ClaimedRow[], settlement: AckSettlement): Promise<void>;
  /**
   * Optional (a batch's end carries the next claim): ends the batch of `token` as {@link
   * RowLockClaimer.settleAndCommit} does (`rows` may be empty: then only the commit), then, on the
   * same connection, opens the next claim's transaction and claims as {@link
   * RowLockClaimer.claim} does with `request`: sent together where the client allows
   * (PostgreSQL's pipelined connection: the acks, `COMMIT`, `BEGIN` and the claim in one write,
   * one round trip instead of two and no checkout from the pool). The broker calls it when a
   * claim starts in the event-loop turn in which a batch's last row settled, and otherwise ends
   * the batch with `settleAndCommit`.
   *
   * Never throws; reports the two parts apart. `ended`: `undefined` once the batch committed,
   * else `{ error }`: why nothing of it was committed (the transaction is over, as after a failed
   * `settleAndCommit`). `claimed`: the new batch (its token holds the connection now; the ended
   * batch's token holds nothing), `null` when no row was due (that transaction ended and the
   * connection went back), or the claim's error, after which the claimer has ended the claim's
   * transaction and let the connection go; the broker then claims again on its own (a new
   * connection), so a claim is never lost to the batch's end.
   */
  commitAndClaim?(
    token: T,
    rows: readonly ClaimedRow[],
    settlement: AckSettlement,
    request: ClaimRequest,
  ): Promise<CommittedAndClaimed<T>>;
  /** Commits the batch's transaction and returns its connection. */
  commit(token: T): Promise<void>;
  /** Rolls the batch's transaction back (every row due again, no attempt spent) and returns its connection. */
  rollback(token: T): Promise<void>;
  /**
   * Optional (transactional handlers, see `capabilities.transactionalHandlers`): inside the
   * batch's transaction, opens a savepoint, runs `work` with the transaction's client, applies
   * the settlement `work` returns like {@link RowLockClaimer.settle}, and releases the
   * savepoint; the batch's commit then commits the writes with the settlement. When `work`
   * throws, rolls back to the savepoint (the batch goes on, without this body's writes) and
   * rethrows its error unchanged.
   */
  transaction?(token: T, row: ClaimedRow, work: TransactionWork): Promise<void>;
}

/** What {@link RowLockClaimer.commitAndClaim} returns: how the batch ended, and the next claim. */
export interface CommittedAndClaimed<T extends RowLockToken = RowLockToken> {
  /** `undefined` once the batch committed; else why nothing of it was committed. */
  readonly ended: { readonly error: unknown } | undefined;
  /** The next claim: its batch, `null` when no row was due, or `{ error }` when it failed. */
  readonly claimed: RowLockBatch<T> | null | { readonly error: unknown };
}

/**
 * The lease form: the claim writes `lockedUntil` and counts the attempt, then commits at once.
 * Extension and settlement take effect only where the row still holds the token.
 */
export interface LeaseClaimer<T extends LeaseToken = LeaseToken> extends ClaimerBase {
  readonly form: "lease";
  /** Claims up to `limit` due rows, writing `request.expiry`; returns them in claim order where the database can. */
  claim(request: LeaseClaimRequest): Promise<readonly Claimed<T>[]>;
  /**
   * Moves each held lease to `expiry`. Returns, in order, the new token, or `null` where the row
   * no longer holds the old one (the lease is lost).
   */
  extend(
    held: readonly { readonly id: RowId; readonly token: T }[],
    expiry: Date,
  ): Promise<readonly (T | null)[]>;
  /**
   * Settles one row while it still holds `token`.
   *
   * @throws {LeaseLostError} when the row holds another token (or is gone); nothing changed.
   */
  settle(id: RowId, token: T, settlement: Settlement): Promise<void>;
  /**
   * Optional (coalesced settlements): applies one acknowledging settlement to several rows, each
   * only while it still holds its own token, as one statement (or one transaction) and one
   * commit. Returns, in order, `true` where the row was settled and `false` where it holds
   * another token or is gone: such a row is unchanged, and the broker fails its delivery alone
   * with `LEASE_LOST`. Throws when the database fails; then no row changed (the broker fails
   * every delivery of the call with that error). The broker calls it with the settlements that
   * became ready while the previous call ran, at least two rows and at most {@link
   * MAX_COALESCED_SETTLEMENTS}. Left out, the broker settles each row with `settle`.
   */
  settleMany?(
    held: readonly { readonly id: RowId; readonly token: T }[],
    settlement: AckSettlement,
  ): Promise<readonly boolean[]>;
  /**
   * Optional (an ack sent with the next claim): in one transaction and one commit, applies
   * `settlement` to every row of `held` exactly as {@link LeaseClaimer.settleMany} does (each row
   * only while it still holds its own token; here one row or more), then claims as {@link
   * LeaseClaimer.claim} does with `request`. The broker calls it when a claim finds acks waiting
   * to be sent (a worker that acked asks for its next row): one commit instead of two, which is
   * what a database that syncs each commit to disk spends its time on. Returns, in order, whether
   * each row of `held` was settled (`false`: it holds another token or is gone, and is
   * unchanged; the broker fails its delivery alone with `LEASE_LOST`), and the claimed rows. A
   * row of `held` is never among the claimed rows (it is settled first). Throws when the
   * database fails; then nothing changed, no row settled and none claimed (the broker then
   * sends the acks on their own and claims again, so each part reports its own error). Left
   * out (or without `settleMany`, which the broker needs too), acks go on their own.
   */
  settleAndClaim?(
    held: readonly { readonly id: RowId; readonly token: T }[],
    settlement: AckSettlement,
    request: LeaseClaimRequest,
  ): Promise<SettledAndClaimed<T>>;
  /**
   * Optional (transactional handlers): opens a transaction on one connection, runs `work` with
   * its client, then asks `fence` for the token the delivery holds now (it throws
   * `LeaseLostError` when the lease is known lost) and applies the settlement `work` returned
   * where the row still holds that token, last, and commits. A settlement that finds another
   * token rolls everything back and throws `LeaseLostError`. When `work` throws, rolls back and
   * rethrows its error unchanged (the lease stays held). When `signal` aborts while the body
   * runs (the broker gave the delivery up, or the lease was lost), ends the transaction's session
   * at once, so that the body's next statement fails instead of running outside it.
   */
  transaction?(id: RowId, work: TransactionWork, fence: () => Promise<T>, signal: AbortSignal): Promise<void>;
}

/** What {@link LeaseClaimer.settleAndClaim} returns: each ack's result, in order, and the rows claimed. */
export interface SettledAndClaimed<T> {
  /** `true` where the row was settled; `false` where it holds another token or is gone (unchanged). */
  readonly settled: readonly boolean[];
  /** The rows the claim took, in claim order where the database can. */
  readonly claimed: readonly Claimed<T>[];
}

/**
 * The advisory lock form: each row is taken under a lock on its rendered key, on a connection
 * of its own that stays with the delivery until it settles.
 */
export interface AdvisoryClaimer<T extends AdvisoryToken = AdvisoryToken> extends ClaimerBase {
  readonly form: "advisory";
  /**
   * Selects due rows with their keys, tries each key's lock without waiting, passes over keys
   * held elsewhere, and takes each locked row while it is still claimable (counting the attempt).
   */
  claim(request: ClaimRequest): Promise<readonly Claimed<T>[]>;
  /** Settles on the token's connection, then unlocks the key and returns the connection. */
  settle(token: T, row: ClaimedRow, settlement: Settlement): Promise<void>;
  /**
   * Optional (an ack sent with the next claim): in one transaction and one commit, applies
   * `settlement` to the row of each entry of `acks` as {@link AdvisoryClaimer.settle} would
   * (only while the row is still unfinished), unlocks their keys, and claims as {@link
   * AdvisoryClaimer.claim} does with `request` (a key just unlocked may be taken again, for its
   * next row). For a database whose locks live in the process (SQLite), where a claim and the
   * settlements share one connection. Returns, in order, whether each ack's row was settled
   * (`false`: the row was gone or finished, nothing changed; the broker fails that delivery
   * alone with `LEASE_LOST`), and the claimed rows. Throws when the database fails; then nothing
   * changed: no row settled, none claimed, and every ack's key is still held (the broker then
   * settles each ack on its own and claims again). Left out, acks go on their own.
   */
  settleAndClaim?(
    acks: readonly { readonly token: T; readonly row: ClaimedRow }[],
    settlement: AckSettlement,
    request: ClaimRequest,
  ): Promise<SettledAndClaimed<T>>;
  /** Unlocks the key without settling (the row stays as the take left it) and returns the connection. */
  release(token: T): Promise<void>;
  /**
   * Optional (transactional handlers): opens a transaction on the token's connection (the key
   * still held), runs `work` with its client, applies the settlement `work` returned, commits,
   * then unlocks and returns the connection like {@link AdvisoryClaimer.settle}. When `work`
   * throws, rolls back and rethrows its error unchanged, keeping the key and the connection (the
   * delivery settles later). Any other failure unlocks (or closes the connection) and throws.
   */
  transaction?(token: T, row: ClaimedRow, work: TransactionWork): Promise<void>;
}

/** Any claimer. */
export type Claimer = RowLockClaimer | LeaseClaimer | AdvisoryClaimer;
