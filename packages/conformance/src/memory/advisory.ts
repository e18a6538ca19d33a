/**
 * The advisory lock form on the memory database: a claim picks due rows, one per key, passing
 * over keys any session holds; each taken row gets a connection of its own that holds the key's
 * lock (database-wide, as on a server) and the take counts the attempt. A settlement applies only
 * while the row is unfinished, then unlocks the key and returns the connection.
 *
 * @module
 */
import {
  type AdvisoryClaimer,
  type AdvisoryToken,
  type Claimed,
  type ClaimedRow,
  type ClaimRequest,
  LeaseLostError,
  type Settlement,
} from "@rowclaim/core";
import { claimable, claimOrder, renderKey, unfinished } from "./claim-order.js";
import { claimedRow } from "./claimed-row.js";
import { type ClaimerContext, storedTable } from "./context.js";
import type { MemoryConnection } from "./pool.js";
import { planSettlement } from "./settle.js";
import { type MemoryRow, rowKey } from "./store.js";

/** The memory advisory form's token: the key, and the connection (session) that holds its lock. */
export interface MemoryAdvisoryToken extends AdvisoryToken {
  readonly connection: MemoryConnection;
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
    const { database, table, group, pool } = this.#context;
    const data = storedTable(this.#context, "advisory claim");
    const order = claimOrder(table);
    // The first row in claim order of every key nobody holds.
    const firstOfKey = new Map<string, { key: string; row: MemoryRow }>();
    for (const [key, row] of data.rows) {
      if (!claimable(table, row, group, request.now) || data.locks.has(key)) continue;
      const advisoryKey = renderKey(table, row);
      if (database.keyHeld(advisoryKey)) continue;
      const known = firstOfKey.get(advisoryKey);
      if (known === undefined || order(row, known.row) < 0) firstOfKey.set(advisoryKey, { key, row });
    }
    const picked = [...firstOfKey.entries()]
      .sort(([, a], [, b]) => order(a.row, b.row))
      .slice(0, Math.max(0, request.limit));
    const { attempt } = table.columns;
    return picked.map(([advisoryKey, { key, row }]) => {
      const connection = pool.acquire();
      database.tryKey(advisoryKey, connection);
      const taken: Record<string, unknown> = { ...row };
      if (attempt !== undefined) taken[attempt] = Number(row[attempt]) + 1;
      if (table.columns.key !== undefined) taken[table.columns.key] = null;
      data.rows.set(key, taken);
      return {
        row: claimedRow(table, taken, true),
        token: { form: "advisory", key: advisoryKey, connection },
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

  async release(token: MemoryAdvisoryToken): Promise<void> {
    await this.#context.trip("release");
    this.#let(token);
  }

  /** Unlocks the token's key and returns its connection. */
  #let(token: MemoryAdvisoryToken): void {
    this.#context.database.unlockKey(token.key, token.connection);
    token.connection.release();
  }

  async close(): Promise<void> {}
}
