/**
 * The advisory lock form on the memory database: a claim picks due rows, one per key, passing
 * over keys any session holds (with a per-key limit above 1, up to one row per free slot of each
 * key: the slots' lock keys are `key#1` … `key#n`); each taken row gets a connection of its own that holds the key's
 * lock (database-wide, as on a server) and the take counts the attempt. A settlement applies only
 * while the row is unfinished, then unlocks the key and returns the connection. The optional
 * `claimWithAcks` settles acks, unlocks their keys and claims in one round trip (all or nothing:
 * a refused ack leaves every key held); `transaction` runs transactional handlers.
 *
 * @module
 */
import { LeaseLostError } from "@rowclaim/core";
import {
  type Acks,
  type AdvisoryClaimer,
  type AdvisoryToken,
  advisoryRowKey,
  type Claimed,
  type ClaimedRow,
  type ClaimedWithAcks,
  type ClaimRequest,
  freeAdvisorySlots,
  type HeldKeyRow,
  type Settlement,
  type TransactionWork,
} from "@rowclaim/core/driver";
import { claimable, claimOrder, renderKey, unfinished } from "./claim-order.js";
import { claimedRowOf } from "./claimed-row.js";
import { type ClaimerContext, storedTable } from "./context.js";
import type { MemoryConnection } from "./pool.js";
import { planSettlement } from "./settle.js";
import { type MemoryRow, rowKey } from "./store.js";
import { MemoryTransactionClient } from "./transaction-client.js";

/** The memory advisory form's token: the lock key (the slot's, with a limit above 1), and the connection (session) that holds its lock. */
export interface MemoryAdvisoryToken extends AdvisoryToken {
  readonly connection: MemoryConnection;
  /** With a limit above 1: the row's own lock key (`advisoryRowKey`), held beside the slot. */
  readonly rowKey?: string;
}

/** The advisory lock claimer of one subscription. */
export class MemoryAdvisoryClaimer implements AdvisoryClaimer<MemoryAdvisoryToken> {
  readonly form = "advisory";
  readonly #context: ClaimerContext;

  constructor(context: ClaimerContext) {
    this.#context = context;
  }

  async claim(request: ClaimRequest): Promise<readonly Claimed<MemoryAdvisoryToken>[]> {
    await this.#context.trip("claim");
    return this.#claimNow(request);
  }

  /** Settles each ack's row while unfinished, unlocks their keys, then claims: one round trip. */
  async claimWithAcks(
    { rows, settlement }: Acks<HeldKeyRow<MemoryAdvisoryToken>>,
    request: ClaimRequest,
  ): Promise<ClaimedWithAcks<MemoryAdvisoryToken>> {
    await this.#context.trip("claimWithAcks");
    const { table, database } = this.#context;
    const data = storedTable(this.#context, `${settlement.kind} settlement`);
    const writes: (() => void)[] = [];
    // Planned first: a constraint that refuses one ack throws before any row or key changed.
    const settled = rows.map(({ row }) => {
      const key = rowKey(row.id);
      const stored = data.rows.get(key);
      if (stored === undefined || !unfinished(table, stored)) return false;
      writes.push(planSettlement(database, table, data, key, settlement, "advisory"));
      return true;
    });
    for (const write of writes) write();
    for (const { token } of rows) this.#let(token);
    return { settled, claimed: this.#claimNow(request) };
  }

  #claimNow(request: ClaimRequest): Claimed<MemoryAdvisoryToken>[] {
    const { database, table, group, pool } = this.#context;
    const data = storedTable(this.#context, "advisory claim");
    const order = claimOrder(table);
    const limit = table.advisoryLimit;
    // For every key with a slot nobody holds, its first rows in claim order, one per free slot
    // (a limit of 1: the key itself is the one slot). Above 1, a row whose own lock is held (in
    // work under another slot) is passed over.
    const rowKeyOf = (advisoryKey: string, row: MemoryRow): string | undefined =>
      limit === 1 ? undefined : advisoryRowKey(advisoryKey, String(row[table.columns.id]));
    const byKey = new Map<string, { slots: string[]; rows: { key: string; row: MemoryRow }[] }>();
    for (const [key, row] of data.rows) {
      if (!claimable(table, row, group, request.now) || data.locks.has(key)) continue;
      const advisoryKey = renderKey(table, row);
      let entry = byKey.get(advisoryKey);
      if (entry === undefined) {
        entry = { slots: freeAdvisorySlots(advisoryKey, limit, (slot) => database.keyHeld(slot)), rows: [] };
        byKey.set(advisoryKey, entry);
      }
      if (entry.slots.length === 0) continue;
      const rowKey = rowKeyOf(advisoryKey, row);
      if (rowKey !== undefined && database.keyHeld(rowKey)) continue;
      entry.rows.push({ key, row });
      entry.rows.sort((a, b) => order(a.row, b.row));
      entry.rows.length = Math.min(entry.rows.length, entry.slots.length);
    }
    const picked = [...byKey.entries()]
      .flatMap(([advisoryKey, { slots, rows }]) =>
        rows.map((taken, index) => ({
          ...taken,
          slot: slots[index] ?? "",
          rowKey: rowKeyOf(advisoryKey, taken.row),
        })),
      )
      .sort((a, b) => order(a.row, b.row))
      .slice(0, Math.max(0, request.limit));
    const { attempt } = table.columns;
    return picked.map(({ key, row, slot, rowKey }) => {
      const connection = pool.acquire();
      database.tryKey(slot, connection);
      if (rowKey !== undefined) database.tryKey(rowKey, connection);
      const taken: Record<string, unknown> = { ...row };
      if (attempt !== undefined) taken[attempt] = Number(row[attempt]) + 1;
      if (table.columns.key !== undefined) taken[table.columns.key] = null;
      data.rows.set(key, taken);
      return {
        row: claimedRowOf(table, taken, true),
        token: { form: "advisory", key: slot, connection, ...(rowKey === undefined ? {} : { rowKey }) },
      };
    });
  }

  async settle(token: MemoryAdvisoryToken, row: ClaimedRow, settlement: Settlement): Promise<void> {
    await this.#context.trip("settle");
    try {
      const { table, database } = this.#context;
      const data = storedTable(this.#context, `${settlement.kind} settlement`);
      const key = rowKey(row.id);
      const stored = data.rows.get(key);
      if (stored === undefined || !unfinished(table, stored)) {
        throw new LeaseLostError(
          `Table "${table.name}": row ${String(row.id)} is gone or finished (by someone else) while its key "${token.key}" was held; the ${settlement.kind} settlement changed nothing.`,
          { table: table.name },
        );
      }
      planSettlement(database, table, data, key, settlement, "advisory")();
    } finally {
      this.#let(token);
    }
  }

  /**
   * A transactional handler's body and its settlement on the token's connection, committed
   * together, then unlocks; a body that throws commits nothing and keeps the key.
   */
  async transaction(token: MemoryAdvisoryToken, row: ClaimedRow, work: TransactionWork): Promise<void> {
    await this.#context.trip("transaction");
    const client = new MemoryTransactionClient(this.#context.database);
    const settlement = await work(client);
    try {
      const { table, database } = this.#context;
      const data = storedTable(this.#context, `${settlement.kind} settlement`);
      const key = rowKey(row.id);
      const stored = data.rows.get(key);
      if (stored === undefined || !unfinished(table, stored)) {
        throw new LeaseLostError(
          `Table "${table.name}": row ${String(row.id)} is gone or finished (by someone else) while its key "${token.key}" was held; the transaction rolled back.`,
          { table: table.name },
        );
      }
      const write = planSettlement(database, table, data, key, settlement, "advisory");
      for (const statement of client.writes()) statement();
      write();
    } finally {
      this.#let(token);
    }
  }

  async release(token: MemoryAdvisoryToken): Promise<void> {
    await this.#context.trip("release");
    this.#let(token);
  }

  /** Unlocks the token's key and returns its connection. */
  #let(token: MemoryAdvisoryToken): void {
    this.#context.database.unlockKey(token.key, token.connection);
    if (token.rowKey !== undefined) this.#context.database.unlockKey(token.rowKey, token.connection);
    token.connection.release();
  }

  async close(): Promise<void> {}
}
