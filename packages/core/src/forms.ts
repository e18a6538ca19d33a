/**
 * The claim-form interfaces a driver implements, one per form. The broker opens one claimer per
 * subscription with {@link Driver.open}; statements are built then, once, not per message.
 *
 * @module
 */
import type { ClaimedRow, RowId } from "./rows.js";
import type { AckSettlement, Settlement } from "./settlement.js";
import type { AdvisoryToken, LeaseToken, RowLockToken } from "./tokens.js";
import type { TransactionWork } from "./transaction-work.js";

/**
 * The most acks the broker passes to one call (`settleMany`, `claimWithAcks`): bounded so that one
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

/**
 * Rows acknowledged together: the rows, each with what fences it in its form, and their one
 * acknowledging settlement (every ack of a table is the same kind; a `markProcessed` writes the
 * latest ack's time).
 */
export interface Acks<R> {
  readonly rows: readonly R[];
  readonly settlement: AckSettlement;
}

/** A lease in work: the row and the token it holds. */
export interface HeldLease<T extends LeaseToken = LeaseToken> {
  readonly id: RowId;
  readonly token: T;
}

/** An advisory delivery in work: the row and the token that holds its key. */
export interface HeldKeyRow<T extends AdvisoryToken = AdvisoryToken> {
  readonly token: T;
  readonly row: ClaimedRow;
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
 * handlers run, each settlement a statement inside it, then the batch's end. Required: `claim`,
 * `settle`, `endBatch`, `release`. Optional capabilities: `endBatchWithClaim` (the batch's end
 * carries the next claim), `transaction` (transactional handlers). See `DRIVERS.md`.
 */
export interface RowLockClaimer<T extends RowLockToken = RowLockToken> extends ClaimerBase {
  readonly form: "rowLock";
  /** Opens a transaction and locks up to `limit` due rows; `null` (transaction ended) when none. */
  claim(request: ClaimRequest): Promise<RowLockBatch<T> | null>;
  /**
   * Applies one row's settlement inside the batch's transaction (counting the attempt where the
   * row stays). The broker sends acks with the batch's end instead, so this is for the others.
   */
  settle(token: T, row: ClaimedRow, settlement: Settlement): Promise<void>;
  /**
   * Ends the batch: applies `acks` (every row whose delivery acked, as `settle` would apply it to
   * each) inside its transaction, commits and returns the connection, in as few round trips as
   * the database allows. Without `acks`, only the commit. A failure (thrown) means nothing of the
   * batch was committed, and the transaction is over (the broker calls no `release` after it).
   */
  endBatch(token: T, acks?: Acks<ClaimedRow>): Promise<void>;
  /**
   * Optional (a batch's end carries the next claim): ends the batch as {@link
   * RowLockClaimer.endBatch} does, then, on the same connection, claims as {@link
   * RowLockClaimer.claim} does with `next`, sent together where the client allows. The broker
   * calls it when a claim starts in the event-loop turn in which the batch's last row acked.
   * Never throws: {@link BatchEnd} reports the two parts apart, and the broker claims again on
   * its own after a claim's error.
   */
  endBatchWithClaim?(token: T, acks: Acks<ClaimedRow>, next: ClaimRequest): Promise<BatchEnd<T>>;
  /** Rolls the batch's transaction back (every row due again, no attempt spent) and returns its connection. */
  release(token: T): Promise<void>;
  /**
   * Optional (transactional handlers, see `capabilities.transactionalHandlers`): inside the
   * batch's transaction, opens a savepoint, runs `work` with the transaction's client, applies
   * the settlement `work` returns like {@link RowLockClaimer.settle}, and releases the
   * savepoint; the batch's end then commits the writes with the settlement. When `work`
   * throws, rolls back to the savepoint (the batch goes on, without this body's writes) and
   * rethrows its error unchanged.
   */
  transaction?(token: T, row: ClaimedRow, work: TransactionWork): Promise<void>;
}

/** What {@link RowLockClaimer.endBatchWithClaim} returns: how the batch ended, and the next claim. */
export interface BatchEnd<T extends RowLockToken = RowLockToken> {
  /** `undefined` once the batch committed; else why nothing of it was committed (the transaction is over). */
  readonly ended: { readonly error: unknown } | undefined;
  /**
   * The next claim: its batch (its token holds the connection now), `null` when no row was due
   * (that transaction ended, the connection returned), or `{ error }` when it failed (its
   * transaction ended, the connection let go).
   */
  readonly claimed: RowLockBatch<T> | null | { readonly error: unknown };
}

/**
 * The lease form: the claim writes `lockedUntil` and counts the attempt, then commits at once.
 * Extension and settlement take effect only where the row still holds the token. Required:
 * `claim`, `extend`, `settle`. Optional capabilities: `settleMany` (acks as one statement),
 * `claimWithAcks` (acks sent with the next claim), `transaction`. See `DRIVERS.md`.
 */
export interface LeaseClaimer<T extends LeaseToken = LeaseToken> extends ClaimerBase {
  readonly form: "lease";
  /** Claims up to `limit` due rows, writing `request.expiry`; returns them in claim order where the database can. */
  claim(request: LeaseClaimRequest): Promise<readonly Claimed<T>[]>;
  /**
   * Moves each held lease to `expiry`. Returns, in order, the new token, or `null` where the row
   * no longer holds the old one (the lease is lost).
   */
  extend(held: readonly HeldLease<T>[], expiry: Date): Promise<readonly (T | null)[]>;
  /**
   * Settles one row while it still holds `token`.
   *
   * @throws {LeaseLostError} when the row holds another token (or is gone); nothing changed.
   */
  settle(id: RowId, token: T, settlement: Settlement): Promise<void>;
  /**
   * Optional (coalesced acks): settles every row of `acks`, each only while it still holds its
   * own token, as one statement (or one transaction) and one commit. Returns, in order, `true`
   * where the row was settled and `false` where it holds another token or is gone (unchanged).
   * Throws when the database fails; then no row changed. The broker passes at least two rows,
   * at most {@link MAX_COALESCED_SETTLEMENTS}, never one row twice. Left out, the broker settles
   * each row with `settle`.
   */
  settleMany?(acks: Acks<HeldLease<T>>): Promise<readonly boolean[]>;
  /**
   * Optional (acks sent with the next claim): in one transaction and one commit, settles `acks`
   * as {@link LeaseClaimer.settleMany} does (here one row or more), then claims as {@link
   * LeaseClaimer.claim} does with `request` (never taking a row of `acks`). Throws when the
   * database fails; then nothing changed: the broker sends the acks on their own and claims again.
   */
  claimWithAcks?(acks: Acks<HeldLease<T>>, request: LeaseClaimRequest): Promise<ClaimedWithAcks<T>>;
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

/** What a claim that carried acks returns: each ack's result, in order, and the rows claimed. */
export interface ClaimedWithAcks<T> {
  /** `true` where the row was settled; `false` where it holds another token or is gone (unchanged). */
  readonly settled: readonly boolean[];
  /** The rows the claim took, in claim order where the database can. */
  readonly claimed: readonly Claimed<T>[];
}

/**
 * The advisory lock form: each row is taken under a lock on its rendered key, on a connection
 * of its own that stays with the delivery until it settles. Required: `claim`, `settle`,
 * `release`. Optional capabilities: `claimWithAcks`, `transaction`. See `DRIVERS.md`.
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
   * Optional (acks sent with the next claim): in one transaction and one commit, settles the
   * row of each ack as {@link AdvisoryClaimer.settle} would (only while it is still unfinished),
   * unlocks their keys and claims as {@link AdvisoryClaimer.claim} does with `request` (a key
   * just unlocked may be taken again). Returns whether each ack's row was settled (`false`: gone
   * or finished, nothing changed) and the claimed rows. Throws when the database fails; then
   * nothing changed and every ack's key is still held: the broker settles each ack on its own
   * and claims again.
   */
  claimWithAcks?(acks: Acks<HeldKeyRow<T>>, request: ClaimRequest): Promise<ClaimedWithAcks<T>>;
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

/** `C` with its optional capability `K` present. */
export type Offering<C, K extends keyof C> = C & { readonly [P in K]-?: NonNullable<C[P]> };

/** Whether `claimer` offers the optional capability `key` (its type then says so). */
export function offers<C extends Claimer, K extends keyof C>(claimer: C, key: K): claimer is Offering<C, K> {
  return claimer[key] !== undefined;
}
