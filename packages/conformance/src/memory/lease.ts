/**
 * The lease form on the memory database: a claim writes `lockedUntil` (the token) and counts
 * the attempt, and is over at once; an extension or a settlement takes effect only where the
 * row still holds its token. A FIFO claim takes the group's head, and nothing while a row of
 * the group holds a lease that has not run out. It offers core's optional capabilities too:
 * `settleMany` (every ack fenced by its own token, all or nothing), `claimWithAcks` (those
 * acks and the next claim in one round trip) and `transaction` (transactional handlers).
 *
 * @module
 */
import { LeaseLostError, type RowId } from "@rowclaim/core";
import type {
  Acks,
  Claimed,
  ClaimedWithAcks,
  HeldLease,
  LeaseClaimer,
  LeaseClaimRequest,
  LeaseToken,
  Settlement,
  TransactionWork,
} from "@rowclaim/core/driver";
import { claimable, fifoHead, firstInClaimOrder, inGroup, type KeyedRow, unfinished } from "./claim-order.js";
import { claimedRowOf } from "./claimed-row.js";
import { type ClaimerContext, storedTable } from "./context.js";
import { planSettlement } from "./settle.js";
import { type MemoryRow, type MemoryTable, rowKey, timeOf } from "./store.js";
import { MemoryTransactionClient } from "./transaction-client.js";

/** The memory lease form's token: the expiry written into `lockedUntil`. */
export type MemoryLeaseToken = LeaseToken;

/** The lease claimer of one subscription. */
export class MemoryLeaseClaimer implements LeaseClaimer<MemoryLeaseToken> {
  readonly form = "lease";
  readonly #context: ClaimerContext;
  readonly #lockedUntil: string;

  constructor(context: ClaimerContext) {
    this.#context = context;
    this.#lockedUntil = context.table.columns.lockedUntil as string;
  }

  async claim(request: LeaseClaimRequest): Promise<readonly Claimed<MemoryLeaseToken>[]> {
    await this.#context.trip("claim");
    return this.#claimNow(request);
  }

  /** Every ack fenced by its own token, in one round trip; a constraint refusing one changes none. */
  async settleMany(acks: Acks<HeldLease<MemoryLeaseToken>>): Promise<readonly boolean[]> {
    await this.#context.trip("settleMany");
    return this.#settleAcks(acks);
  }

  /** The acks as {@link MemoryLeaseClaimer.settleMany} settles them, then a claim, in one round trip. */
  async claimWithAcks(
    acks: Acks<HeldLease<MemoryLeaseToken>>,
    request: LeaseClaimRequest,
  ): Promise<ClaimedWithAcks<MemoryLeaseToken>> {
    await this.#context.trip("claimWithAcks");
    const settled = this.#settleAcks(acks);
    return { settled, claimed: this.#claimNow(request) };
  }

  /** Plans every ack whose row holds its token, then applies them all (none when one is refused). */
  #settleAcks({ rows, settlement }: Acks<HeldLease<MemoryLeaseToken>>): boolean[] {
    const { database, table } = this.#context;
    const data = storedTable(this.#context, `${settlement.kind} settlement`);
    const writes: (() => void)[] = [];
    const settled = rows.map(({ id, token }) => {
      const key = rowKey(id);
      if (!this.#holds(data.rows.get(key), token)) return false;
      writes.push(planSettlement(database, table, data, key, settlement, "lease"));
      return true;
    });
    for (const write of writes) write();
    return settled;
  }

  #claimNow(request: LeaseClaimRequest): Claimed<MemoryLeaseToken>[] {
    const { table, group } = this.#context;
    const data = storedTable(this.#context, "lease claim");
    const picked = table.fifo
      ? this.#fifoPick(data, request)
      : firstInClaimOrder(
          table,
          data,
          (row, key) => claimable(table, row, group, request.now) && !data.locks.has(key),
          request.limit,
        );
    const { attempt } = table.columns;
    return picked.map(({ key, row }) => {
      const taken: Record<string, unknown> = { ...row, [this.#lockedUntil]: request.expiry };
      if (attempt !== undefined) taken[attempt] = Number(row[attempt]) + 1;
      if (table.columns.key !== undefined) taken[table.columns.key] = null;
      data.rows.set(key, taken);
      return { row: claimedRowOf(table, taken, true), token: { form: "lease", expiry: request.expiry } };
    });
  }

  #fifoPick(data: MemoryTable, request: LeaseClaimRequest): KeyedRow[] {
    const { table, group } = this.#context;
    const now = request.now.getTime();
    for (const row of data.rows.values()) {
      const until = timeOf(row[this.#lockedUntil]);
      if (until !== null && until > now && unfinished(table, row) && inGroup(table, row, group)) return [];
    }
    const head = fifoHead(table, data, group);
    if (head === undefined || !claimable(table, head.row, group, request.now) || data.locks.has(head.key)) {
      return [];
    }
    return [head];
  }

  /** Whether `row` still holds `token`. */
  #holds(row: MemoryRow | undefined, token: MemoryLeaseToken): row is MemoryRow {
    return row !== undefined && timeOf(row[this.#lockedUntil]) === token.expiry.getTime();
  }

  async extend(
    held: readonly { readonly id: RowId; readonly token: MemoryLeaseToken }[],
    expiry: Date,
  ): Promise<readonly (MemoryLeaseToken | null)[]> {
    await this.#context.trip("extend");
    const data = storedTable(this.#context, "lease extension");
    return held.map(({ id, token }) => {
      const key = rowKey(id);
      const row = data.rows.get(key);
      if (!this.#holds(row, token)) return null;
      data.rows.set(key, { ...row, [this.#lockedUntil]: expiry });
      return { form: "lease", expiry };
    });
  }

  async settle(id: RowId, token: MemoryLeaseToken, settlement: Settlement): Promise<void> {
    await this.#context.trip("settle");
    const data = storedTable(this.#context, `${settlement.kind} settlement`);
    const key = rowKey(id);
    if (!this.#holds(data.rows.get(key), token)) {
      throw new LeaseLostError(
        `Table "${this.#context.table.name}": row ${String(id)} no longer holds the lease this delivery took (its lockedUntil changed, or the row is gone); the ${settlement.kind} settlement changed nothing.`,
        { table: this.#context.table.name },
      );
    }
    planSettlement(this.#context.database, this.#context.table, data, key, settlement, "lease")();
  }

  /**
   * A transactional handler's body and its settlement, fenced by the token `fence` gives once
   * the body is done, committed together; a body that throws, or a fence that fails, commits
   * nothing. Once `signal` aborts, the body's statements fail.
   */
  async transaction(
    id: RowId,
    work: TransactionWork,
    fence: () => Promise<MemoryLeaseToken>,
    signal: AbortSignal,
  ): Promise<void> {
    await this.#context.trip("transaction");
    const client = new MemoryTransactionClient(this.#context.database, signal);
    const settlement = await work(client);
    const token = await fence();
    const data = storedTable(this.#context, `${settlement.kind} settlement`);
    const key = rowKey(id);
    if (!this.#holds(data.rows.get(key), token)) {
      throw new LeaseLostError(
        `Table "${this.#context.table.name}": row ${String(id)} no longer holds the lease this delivery took; the transaction rolled back.`,
        { table: this.#context.table.name },
      );
    }
    const write = planSettlement(this.#context.database, this.#context.table, data, key, settlement, "lease");
    for (const statement of client.writes()) statement();
    write();
  }

  async close(): Promise<void> {}
}
