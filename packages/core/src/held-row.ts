/**
 * The broker's side of the three claim forms: a {@link FormRuntime} claims rows through a
 * driver's claimer and hands each back as a {@link HeldRow} that knows how to settle, and how
 * to give up, the way its form holds it.
 *
 * @module
 */
import type { BrokerError } from "./errors.js";
import type { ClaimedRow } from "./rows.js";
import type { Settlement } from "./settlement.js";
import type { TransactionWork } from "./transaction-work.js";

/** A claimed row in work, with what holds it. */
export interface HeldRow {
  /** The row as claimed. */
  readonly row: ClaimedRow;
  /** Aborts when the hold is lost (lease taken over) or given up (broker closed). Made on first read. */
  readonly signal: AbortSignal;
  /** Whether `signal` aborted, read without making the signal. */
  readonly aborted: boolean;
  /** The lease expiry the delivery holds now (lease form), else `undefined`. */
  readonly leaseExpiry: Date | undefined;
  /**
   * Lease form: whether the lease has run out by the host's clock (an extension may not have
   * had its turn, after a stall). Absent (or `false`) in the other forms.
   */
  readonly expired?: boolean;
  /** Settles the row by its hold. Called at most once (this or {@link HeldRow.settleInto}). */
  settle(settlement: Settlement): Promise<void>;
  /**
   * Optional: settles as {@link HeldRow.settle} does, but answers `answer` (once) where `settle`
   * would resolve or reject its promise: a form whose acks wait for a batch to go makes no
   * promise, nor its two functions, a delivery. Called at most once (this or `settle`).
   */
  settleInto?(settlement: Settlement, answer: SettleAnswer): void;
  /**
   * Runs `work` (a transactional handler's body) and the settlement it returns in one
   * transaction, by the form's claimer. Absent where the claimer offers no transactions. When
   * `work` throws, its writes are rolled back, the row stays held, and its error is rethrown.
   */
  readonly transaction?: ((work: TransactionWork) => Promise<void>) | undefined;
  /**
   * Lease form: retries the row after a delay where the table has no `runAt` column, by moving
   * its lease to `until` (rounded up to a whole second) and letting the row go. Absent in the
   * other forms, where a delayed retry holds the row until it is due (`retry-delay.ts`).
   */
  readonly delay?: ((until: Date) => Promise<void>) | undefined;
  /** Gives the hold up without settling (broker closing after its timeout); aborts `signal` with `reason`. */
  abandon(reason: BrokerError): Promise<void>;
  /**
   * Gives back a row claimed ahead whose handler never started (the subscription stopped while
   * it waited for a worker): lease → released, due again (the attempt the claim counted stays
   * counted); row lock → left untouched by the batch's transaction (no attempt counted);
   * advisory → unlocked as the take left it. Aborts `signal` with `reason`. A lease already lost
   * has nothing to give back.
   */
  giveBack(reason: BrokerError): Promise<void>;
}

/** What {@link HeldRow.settleInto} answers, once: the settlement landed, or failed with an error. */
export interface SettleAnswer {
  /** The settlement is committed. */
  landed(): void;
  /** The settlement failed with `error` (as `settle` would reject). */
  failed(error: unknown): void;
}

/** Answers `answer` when `settled` resolves or rejects (a hold's `settleInto` where it has no list of its own). */
export function answerWhen(settled: Promise<void>, answer: SettleAnswer): void {
  settled.then(
    () => answer.landed(),
    (error: unknown) => answer.failed(error),
  );
}

/** Claims rows for one subscription in one form. */
export interface FormRuntime {
  /** Claims up to `limit` rows. */
  claim(limit: number): Promise<readonly HeldRow[]>;
  /** Stops background work (lease extension) and closes the driver's claimer. */
  close(): Promise<void>;
}
