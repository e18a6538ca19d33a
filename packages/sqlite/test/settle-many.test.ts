/**
 * Coalesced lease settlements (`LeaseClaimer.settleMany`), tested on the claimer directly: each
 * row fenced by its own token, one transaction for the call, a database error changing nothing.
 */
import {
  BrokerError,
  defineTable,
  silentLogger,
  type TableDefinition,
  type TableDescription,
} from "@rowclaim/core";
import { type LeaseClaimer, type LeaseToken, MAX_COALESCED_SETTLEMENTS } from "@rowclaim/core/driver";
import { describe, expect, it } from "vitest";
import { leaseTable, publishRow, uniqueName, useSqliteFile } from "./support.js";

const sqlite = useSqliteFile();
const { driver, rows, leaseClaimer } = sqlite;

function table(extra: Partial<TableDescription> = {}): TableDefinition {
  const defined = defineTable(leaseTable(uniqueName("settle_many"), extra));
  sqlite.db.exec(driver().schemaSql(defined));
  return defined;
}

const withProcessedAt = { columns: { ...leaseTable("x").columns, processedAt: "processed_at" } };

/** Publishes `count` rows and claims them all with `claimer`, leased until `expiryMs`. */
async function publishAndClaim(
  t: TableDefinition,
  claimer: LeaseClaimer,
  count: number,
  expiryMs = Date.now() + 60_000,
): Promise<{ id: string | number | bigint; token: LeaseToken }[]> {
  await driver().publish(
    t,
    Array.from({ length: count }, (_, n) => publishRow(JSON.stringify({ n }))),
    {},
  );
  const claimed = await claimer.claim({ limit: count, now: new Date(), expiry: new Date(expiryMs) });
  expect(claimed).toHaveLength(count);
  return claimed.map(({ row, token }) => ({ id: row.id, token }));
}

describe("settleMany (lease form)", () => {
  it("deletes every row that still holds its own token, in one call", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    const held = await publishAndClaim(t, claimer, 5);
    const settled = await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } });
    expect(settled).toEqual([true, true, true, true, true]);
    expect(rows(t)).toEqual([]);
  });

  it("fences each row by its own token: rows claimed with different expiries settle together", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    const first = await publishAndClaim(t, claimer, 3, Date.now() + 60_000);
    const second = await publishAndClaim(t, claimer, 3, Date.now() + 90_000);
    const held = [first[0], second[0], first[1], second[1], first[2], second[2]].filter(
      (entry) => entry !== undefined,
    );
    expect(await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } })).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(rows(t)).toEqual([]);
  });

  it("a row whose lease was taken over reads false and is unchanged; the others are settled", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    const held = await publishAndClaim(t, claimer, 4);
    const stolen = held[2];
    if (stolen === undefined) throw new Error("no third row");
    const stolenUntil = stolen.token.expiry.getTime() + 5000;
    sqlite.db.prepare(`UPDATE "${t.name}" SET locked_until = ? WHERE id = ?`).run(stolenUntil, stolen.id);
    const stolenRow = rows(t).find((row) => row.id === stolen.id);
    const settled = await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } });
    expect(settled).toEqual([true, true, false, true]);
    expect(rows(t)).toEqual([stolenRow]);
    expect(stolenRow).toMatchObject({ locked_until: stolenUntil });
  });

  it("a row that is gone reads false; the others are settled", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    const held = await publishAndClaim(t, claimer, 3);
    sqlite.db.prepare(`DELETE FROM "${t.name}" WHERE id = ?`).run(held[0]?.id);
    expect(await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } })).toEqual([
      false,
      true,
      true,
    ]);
    expect(rows(t)).toEqual([]);
  });

  it("markProcessed sets processedAt and clears lockedUntil where the token holds, and leaves a stolen row alone", async () => {
    const t = table(withProcessedAt);
    const claimer = await leaseClaimer(t);
    const held = await publishAndClaim(t, claimer, 3);
    const stolen = held[0];
    if (stolen === undefined) throw new Error("no first row");
    const stolenUntil = stolen.token.expiry.getTime() + 5000;
    sqlite.db.prepare(`UPDATE "${t.name}" SET locked_until = ? WHERE id = ?`).run(stolenUntil, stolen.id);
    const at = new Date(Date.now() - 1234);
    expect(await claimer.settleMany?.({ rows: held, settlement: { kind: "markProcessed", at } })).toEqual([
      false,
      true,
      true,
    ]);
    const [first, second, third] = rows(t);
    expect(first).toMatchObject({ id: stolen.id, processed_at: null, locked_until: stolenUntil });
    expect(second).toMatchObject({ processed_at: at.getTime(), locked_until: null });
    expect(third).toMatchObject({ processed_at: at.getTime(), locked_until: null });
  });

  it("settles rows with text ids", async () => {
    const name = uniqueName("settle_many_text");
    const t = defineTable(leaseTable(name));
    sqlite.db.exec(
      `CREATE TABLE "${name}" (id TEXT PRIMARY KEY, payload TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, run_at INTEGER, priority INTEGER, queue TEXT, locked_until INTEGER, headers TEXT)`,
    );
    const insert = sqlite.db.prepare(`INSERT INTO "${name}" (id, payload) VALUES (?, '{}')`);
    for (const id of ["7f1c0e2a-0000-4000-8000-000000000001", "7f1c0e2a-0000-4000-8000-000000000002", "10"]) {
      insert.run(id);
    }
    const claimer = await leaseClaimer(t);
    const claimed = await claimer.claim({ limit: 3, now: new Date(), expiry: new Date(Date.now() + 60_000) });
    const held = claimed.map(({ row, token }) => ({ id: row.id, token }));
    expect(held.map(({ id }) => typeof id)).toEqual(["string", "string", "string"]);
    expect(await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } })).toEqual([
      true,
      true,
      true,
    ]);
    expect(rows(t)).toEqual([]);
  });

  it(`settles ${MAX_COALESCED_SETTLEMENTS} rows in one call`, async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    const held = await publishAndClaim(t, claimer, MAX_COALESCED_SETTLEMENTS);
    const settled = await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } });
    expect(settled).toHaveLength(MAX_COALESCED_SETTLEMENTS);
    expect(settled?.every((one) => one)).toBe(true);
    expect(rows(t)).toEqual([]);
  });

  it("a statement failing midway rolls the whole call back: it throws and no row changed", async () => {
    const t = table();
    const claimer = await leaseClaimer(t);
    const held = await publishAndClaim(t, claimer, 4);
    const before = rows(t);
    // The third row's delete fails (after the first two ran in the same transaction).
    sqlite.db.exec(
      `CREATE TRIGGER "${t.name}_refuse" BEFORE DELETE ON "${t.name}" WHEN old.id = ${Number(held[2]?.id)} BEGIN SELECT RAISE(ABORT, 'refused'); END`,
    );
    const failure = await claimer.settleMany?.({ rows: held, settlement: { kind: "delete" } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(BrokerError.is(failure, "CONSTRAINT")).toBe(true);
    expect(rows(t)).toEqual(before);
    expect(sqlite.db.inTransaction).toBe(false);
  });

  it("a dropped table fails with SCHEMA and leaves the connection out of any transaction", async () => {
    const t = table();
    const d = driver();
    const opened = await d.open(t, { group: null, logger: silentLogger });
    if (opened.form !== "lease") throw new Error("expected a lease claimer");
    const held = await publishAndClaim(t, opened, 2);
    sqlite.db.exec(`DROP TABLE "${t.name}"`);
    const failure = await opened.settleMany?.({ rows: held, settlement: { kind: "delete" } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(BrokerError.is(failure, "SCHEMA")).toBe(true);
    expect(d.database.inTransaction).toBe(false);
  });
});
