/**
 * Lease extension when the connection is lost in the middle of it: the extension is one
 * statement for all held rows, and a lost answer is resolved on a fresh connection, so no row is
 * left extended behind the broker's back (its settlement would then fail with a false
 * `LEASE_LOST` and its handler run again).
 */
import { ack, createBroker, type Delivery, silentLogger } from "@rowclaim/core";
import { type LeaseClaimer, type LeaseToken, leaseExpiry } from "@rowclaim/core/driver";
import { createPool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { createMysqlDriver, ownPoolOptions } from "../src/index.js";
import type { ConnectionLike, PoolLike, QueryOptionsLike } from "../src/pool-like.js";
import { leaseColumns, mysqlUrl, quote, readAll, uniqueName, useMysqlFixture, waitFor } from "./support.js";

const db = useMysqlFixture();

/** An extension statement: an UPDATE that sets the lease column and nothing else. */
const extension = /^UPDATE .* SET `locked_until` = \? WHERE /;

/** How many rows a statement's values name: the length of an id list, or one. */
function rowsNamed(values: readonly unknown[] | undefined): number {
  const list = values?.find((value) => Array.isArray(value));
  return Array.isArray(list) ? list.length : 1;
}

/**
 * A real pool whose connections lose themselves once, on the extension statement that reaches
 * the `cutAt`th row counted over every extension statement: after running it on the server
 * (`"after"`: the server applied it, the answer is lost) or instead of running it (`"before"`).
 */
class CuttingPool implements PoolLike {
  /** Whether the cut happened. */
  cut = false;
  /** Extension statements that ran to their answer after the cut. */
  extensionsAfterCut = 0;
  readonly #pool: PoolLike;
  readonly #cutAt: number;
  readonly #when: "before" | "after";
  #rows = 0;

  constructor(pool: PoolLike, cutAt: number, when: "before" | "after") {
    this.#pool = pool;
    this.#cutAt = cutAt;
    this.#when = when;
  }

  query(statement: QueryOptionsLike | string, values?: unknown[]): Promise<[unknown, unknown]> {
    return typeof statement === "string" ? this.#pool.query(statement, values) : this.#pool.query(statement);
  }

  end(): Promise<void> {
    return this.#pool.end();
  }

  async getConnection(): Promise<ConnectionLike> {
    const connection = await this.#pool.getConnection();
    const run = async (sql: string, send: () => Promise<[unknown, unknown]>, values?: unknown[]) => {
      if (!extension.test(sql)) return send();
      if (this.cut) {
        const answer = await send();
        this.extensionsAfterCut += 1;
        return answer;
      }
      this.#rows += rowsNamed(values);
      if (this.#rows < this.#cutAt) return send();
      this.cut = true;
      if (this.#when === "after") await send();
      connection.destroy();
      throw Object.assign(new Error("Connection lost: The server closed the connection."), {
        code: "PROTOCOL_CONNECTION_LOST",
        fatal: true,
      });
    };
    return {
      get threadId() {
        return connection.threadId;
      },
      query(statement: QueryOptionsLike | string, values?: unknown[]) {
        if (typeof statement === "string")
          return run(statement, () => connection.query(statement, values), values);
        return run(statement.sql, () => connection.query(statement), statement.values);
      },
      release: () => connection.release(),
      destroy: () => connection.destroy(),
    } as ConnectionLike;
  }
}

describe("a lease extension whose connection is lost midway leaves no lease lost behind the broker's back", () => {
  it.each(["after", "before"] as const)(
    "34 held rows, the connection cut at the 10th row (%s the statement ran): no LEASE_LOST, each row settles with its first delivery",
    async (when) => {
      const table = await db.tables.create({
        name: uniqueName("extend_cut"),
        columns: leaseColumns,
        lease: 2,
      });
      const pool = createPool({ uri: await mysqlUrl(), ...ownPoolOptions, connectionLimit: 8 });
      pool.on("connection", (connection) => {
        connection.query("SET time_zone = '+00:00'");
      });
      const cutting = new CuttingPool(pool as unknown as PoolLike, 10, when);
      const broker = createBroker({ driver: createMysqlDriver({ pool: cutting }), logger: silentLogger });
      const lost: unknown[] = [];
      const settleErrors: unknown[] = [];
      broker.on("leaseLost", ({ id }) => void lost.push(id));
      broker.on("settleError", ({ error }) => void settleErrors.push(error));
      const seen: { id: unknown; attempt: number }[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      try {
        const ids = await broker.publishMany(
          table,
          Array.from({ length: 34 }, (_, n) => ({ payload: { n } })),
        );
        await broker.subscribe(
          table,
          async (delivery: Delivery) => {
            seen.push({ id: delivery.id, attempt: delivery.attempt });
            await released;
            return ack();
          },
          { workers: 34, pollInterval: 50 },
        );
        await waitFor(() => seen.length === 34, 30_000, "34 rows in work");
        await waitFor(() => cutting.cut, 30_000, "the extension's connection to be cut");
        await waitFor(() => cutting.extensionsAfterCut > 0, 30_000, "an extension after the cut");
        release();
        await waitFor(async () => (await readAll(db.admin, table)).length === 0, 30_000, "every ack");
        expect(lost).toEqual([]);
        expect(settleErrors).toEqual([]);
        expect(seen.map((delivery) => delivery.id).toSorted()).toEqual([...ids].toSorted());
        expect(seen.every((delivery) => delivery.attempt === 1)).toBe(true);
      } finally {
        release();
        await broker.close();
        await pool.end();
      }
    },
    90_000,
  );
});

describe("a lease extension moves, in one statement, exactly the rows that still hold their own tokens", () => {
  it("a row holding another token, and a stale second hold of a row, are reported null and left as they are", async () => {
    const table = await db.tables.create({ name: uniqueName("extend_fence"), columns: leaseColumns });
    const broker = createBroker({ driver: db.driver, logger: silentLogger });
    await broker.publishMany(
      table,
      Array.from({ length: 3 }, (_, n) => ({ payload: { n } })),
    );
    const claimer = (await db.driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
    try {
      const now = new Date();
      const claimed = await claimer.claim({ limit: 3, now, expiry: leaseExpiry(now, 30) });
      const [first, second, third] = claimed.map(({ row, token }) => ({ id: row.id, token }));
      if (first === undefined || second === undefined || third === undefined) throw new Error("3 rows");
      const other = new Date(Date.now() + 3_600_000);
      other.setUTCMilliseconds(0);
      await db.admin.query(`UPDATE ${quote(table.name)} SET locked_until = ? WHERE id = ?`, [
        other,
        second.id,
      ]);
      const stale: LeaseToken = Object.freeze({ form: "lease", expiry: new Date(now.getTime() - 60_000) });
      const expiry = leaseExpiry(new Date(), 60);
      const tokens = await claimer.extend([{ id: first.id, token: stale }, first, second, third], expiry);
      expect(tokens.map((token) => token?.expiry.getTime() ?? null)).toEqual([
        null,
        expiry.getTime(),
        null,
        expiry.getTime(),
      ]);
      const rows = await readAll(db.admin, table);
      expect(rows.map((row) => (row.locked_until as Date).getTime())).toEqual([
        expiry.getTime(),
        other.getTime(),
        expiry.getTime(),
      ]);
    } finally {
      await claimer.close();
    }
  });
});
