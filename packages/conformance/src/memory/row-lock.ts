/**
 * The row lock form on the memory database: a claim opens a transaction on a connection of its
 * own and locks its rows (passing over rows locked elsewhere, as `SKIP LOCKED` does); each
 * settlement is checked at once and written at the commit; a rollback writes nothing. A FIFO
 * claim takes the group's guard for the transaction and the group's head row, or nothing. The
 * optional `endBatchWithClaim` ends a batch and makes the next claim in one round trip;
 * `transaction` runs transactional handlers.
 *
 * @module
 */
import type { IsolationLevel } from "@rowclaim/core";
import type {
  Acks,
  BatchEnd,
  ClaimedRow,
  ClaimRequest,
  RowLockBatch,
  RowLockClaimer,
  RowLockToken,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { claimable, fifoHead, firstInClaimOrder } from "./claim-order.js";
import { claimedRowOf } from "./claimed-row.js";
import { type ClaimerContext, storedTable } from "./context.js";
import type { MemoryConnection } from "./pool.js";
import { type PendingInserts, type PlannedWrite, planSettlement } from "./settle.js";
import { type MemoryTable, rowKey } from "./store.js";
import { MemoryTransactionClient } from "./transaction-client.js";

/** The isolation level a claim runs at when its table names none: the memory database's default. */
export const DEFAULT_ISOLATION: IsolationLevel = "read committed";

/** A row lock batch's transaction: its connection, its locks and the writes its commit makes. */
export class MemoryTransaction {
  readonly connection: MemoryConnection;
  /** The isolation level the claim asked for (every memory transaction runs serially). */
  readonly isolation: IsolationLevel;
  readonly writes: PlannedWrite[] = [];
  readonly pending: PendingInserts = new Map();
  readonly locked: string[] = [];
  guard: string | undefined;
  #ended = false;

  constructor(connection: MemoryConnection, isolation: IsolationLevel) {
    this.connection = connection;
    this.isolation = isolation;
  }

  /** Whether the transaction committed or rolled back. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Marks the transaction over. @throws {Error} when it was over already. */
  end(): void {
    if (this.#ended) throw new Error("memory database: the transaction has ended already.");
    this.#ended = true;
  }
}

/** The memory row lock form's token: the batch's transaction. */
export interface MemoryRowLockToken extends RowLockToken {
  readonly transaction: MemoryTransaction;
}

/** The group guard's key, never a key a table's template renders (it starts with `rowclaim$`). */
function guardKey(context: ClaimerContext): string {
  const { table, group } = context;
  return `rowclaim$fifo:${JSON.stringify([table.schema ?? null, table.name, group])}`;
}

/** The row lock claimer of one subscription. */
export class MemoryRowLockClaimer implements RowLockClaimer<MemoryRowLockToken> {
  readonly form = "rowLock";
  readonly #context: ClaimerContext;

  constructor(context: ClaimerContext) {
    this.#context = context;
  }

  async claim(request: ClaimRequest): Promise<RowLockBatch<MemoryRowLockToken> | null> {
    await this.#context.trip("claim");
    return this.#claimNow(request);
  }

  /**
   * Ends the batch as {@link MemoryRowLockClaimer.endBatch} does and claims as {@link
   * MemoryRowLockClaimer.claim} does, in one round trip; never throws (each part reports its error).
   */
  async endBatchWithClaim(
    token: MemoryRowLockToken,
    acks: Acks<ClaimedRow>,
    next: ClaimRequest,
  ): Promise<BatchEnd<MemoryRowLockToken>> {
    await this.#context.trip("endBatchWithClaim");
    let ended: BatchEnd["ended"];
    try {
      for (const row of acks.rows) this.#plan(token, row, acks.settlement);
      this.#commit(token);
    } catch (error) {
      ended = { error };
      if (!token.transaction.ended) this.#rollback(token);
    }
    let claimed: BatchEnd<MemoryRowLockToken>["claimed"];
    try {
      claimed = this.#claimNow(next);
    } catch (error) {
      claimed = { error };
    }
    return { ended, claimed };
  }

  #claimNow(request: ClaimRequest): RowLockBatch<MemoryRowLockToken> | null {
    const { database, table, group, pool } = this.#context;
    const data = storedTable(this.#context, "row lock claim");
    const transaction = new MemoryTransaction(pool.acquire(), table.isolation ?? DEFAULT_ISOLATION);
    const picked = table.fifo
      ? this.#fifoPick(data, transaction, request)
      : firstInClaimOrder(
          table,
          data,
          (row, key) => claimable(table, row, group, request.now) && !data.locks.has(key),
          request.limit,
        );
    if (picked.length === 0) {
      this.#finish(data, transaction);
      return null;
    }
    for (const { key } of picked) {
      database.lockRow(data, key, transaction);
      transaction.locked.push(key);
    }
    return {
      rows: picked.map(({ row }) => claimedRowOf(table, row, false)),
      token: { form: "rowLock", transaction },
    };
  }

  #fifoPick(data: MemoryTable, transaction: MemoryTransaction, request: ClaimRequest) {
    const { database, table, group } = this.#context;
    const key = guardKey(this.#context);
    if (!database.tryKey(key, transaction)) return [];
    transaction.guard = key;
    const head = fifoHead(table, data, group);
    if (head === undefined || !claimable(table, head.row, group, request.now) || data.locks.has(head.key)) {
      return [];
    }
    return [head];
  }

  async settle(token: MemoryRowLockToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    await this.#context.trip("settle");
    this.#plan(token, row, settlement);
  }

  /** Checks one row's settlement now and keeps its write for the commit. */
  #plan(token: MemoryRowLockToken, row: ClaimedRow, settlement: Settlement): void {
    const { transaction } = token;
    if (transaction.ended) throw new Error("memory database: settle() on a batch that has ended.");
    const data = storedTable(this.#context, `${settlement.kind} settlement`);
    const key = rowKey(row.id);
    if (!data.rows.has(key)) return;
    transaction.writes.push(
      planSettlement(
        this.#context.database,
        this.#context.table,
        data,
        key,
        settlement,
        "rowLock",
        transaction.pending,
      ),
    );
  }

  /**
   * A transactional handler's body and its settlement inside the batch's transaction, as behind
   * a savepoint: a body that throws leaves none of its statements; else they commit with the
   * batch, after the settlement was checked.
   */
  async transaction(token: MemoryRowLockToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    await this.#context.trip("transaction");
    const client = new MemoryTransactionClient(this.#context.database);
    const settlement = await work(client);
    this.#plan(token, row, settlement);
    token.transaction.writes.push(...client.writes());
  }

  /** The acks, one settlement a row (a failure releases the batch and is thrown), then the commit. */
  async endBatch(token: MemoryRowLockToken, acks?: Acks<ClaimedRow>): Promise<void> {
    if (acks !== undefined) {
      try {
        for (const row of acks.rows) await this.settle(token, row, acks.settlement);
      } catch (error) {
        await this.release(token).catch(() => undefined);
        throw error;
      }
    }
    await this.#context.trip("commit");
    this.#commit(token);
  }

  async release(token: MemoryRowLockToken): Promise<void> {
    await this.#context.trip("rollback");
    this.#rollback(token);
  }

  /** Applies the transaction's writes and lets it go. */
  #commit({ transaction }: MemoryRowLockToken): void {
    transaction.end();
    for (const write of transaction.writes) write();
    this.#finish(this.#context.database.tableOf(this.#context.table), transaction);
  }

  /** Lets the transaction go without its writes. */
  #rollback({ transaction }: MemoryRowLockToken): void {
    transaction.end();
    this.#finish(this.#context.database.tableOf(this.#context.table), transaction);
  }

  /** Lets the transaction's locks and guard go and returns its connection. */
  #finish(data: MemoryTable | undefined, transaction: MemoryTransaction): void {
    const { database } = this.#context;
    if (data !== undefined) for (const key of transaction.locked) database.unlockRow(data, key, transaction);
    if (transaction.guard !== undefined) database.unlockKey(transaction.guard, transaction);
    transaction.connection.release();
  }

  async close(): Promise<void> {}
}
