/**
 * Coalesced settlements (a lease `settleMany`, a row lock batch's `endBatch`) called directly on the claimers, against the real server:
 * every row fenced by its own token in the lease form (a row whose lease was taken over answers
 * `false` alone and is left as it is), one statement inside the batch's transaction in the row
 * lock form, nothing changed when the database fails. The MySQL path (no `DELETE … RETURNING`:
 * a transaction that finds the rows still held under lock) runs on this server too, through a
 * driver told to take the server for MySQL 8.
 */
import { silentLogger, type TableDefinition, type TableDescription } from "@rowclaim/core";
import {
  type Claimed,
  type LeaseClaimer,
  type LeaseToken,
  leaseExpiry,
  type RowLockClaimer,
  type RowLockToken,
} from "@rowclaim/core/driver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMysqlDriver, type MysqlDriver } from "../src/index.js";
import { leaseColumns, mysqlUrl, quote, readAll, uniqueName, useMysqlFixture } from "./support.js";

const db = useMysqlFixture(4);

/** A driver that takes the server for MySQL 8: its lease `settleMany` runs the transaction path. */
let asMysql: MysqlDriver;
beforeAll(async () => {
  asMysql = createMysqlDriver({ url: await mysqlUrl(), connectionLimit: 4, assumeServerVersion: "8.0.36" });
});
afterAll(async () => {
  await asMysql.close();
});

/** Inserts `count` rows with payloads 0, 1, … (and, for a text id column, ids `r0`, `r1`, …). */
async function insertRows(table: TableDefinition, count: number, textIds = false): Promise<void> {
  const tuples = Array.from({ length: count }, (_, n) => (textIds ? `('r${n}', '${n}')` : `('${n}')`));
  await db.admin.query(
    `INSERT INTO ${quote(table.name)} (${textIds ? "id, " : ""}payload) VALUES ${tuples.join(", ")}`,
  );
}

async function openLease(driver: MysqlDriver, table: TableDefinition): Promise<LeaseClaimer> {
  return (await driver.open(table, { group: null, logger: silentLogger })) as LeaseClaimer;
}

async function claimLeased(
  claimer: LeaseClaimer,
  limit: number,
  seconds = 30,
): Promise<Claimed<LeaseToken>[]> {
  const now = new Date();
  const claimed = [...(await claimer.claim({ limit, now, expiry: leaseExpiry(now, seconds) }))];
  expect(claimed).toHaveLength(limit);
  return claimed;
}

const held = (claimed: readonly Claimed<LeaseToken>[]) =>
  claimed.map(({ row, token }) => ({ id: row.id, token }));

/** Takes row `id`'s lease over, as another claim would after it ran out. */
async function stealLease(table: TableDefinition, id: unknown): Promise<Date> {
  const other = new Date(Date.now() + 3_600_000);
  other.setUTCMilliseconds(0);
  await db.admin.query(`UPDATE ${quote(table.name)} SET locked_until = ? WHERE id = ?`, [other, id]);
  return other;
}

describe.each([
  ["MariaDB (a DELETE … RETURNING per row, one transaction)", () => db.driver],
  ["MySQL 8 (one transaction)", () => asMysql],
])("lease settleMany on %s", (_label, driverOf) => {
  it("deletes every row still holding its own token, with tokens that differ between rows", async () => {
    const table = await db.tables.create({ name: uniqueName("sm_all"), columns: leaseColumns });
    await insertRows(table, 4);
    const claimer = await openLease(driverOf(), table);
    const first = await claimLeased(claimer, 2, 30);
    const second = await claimLeased(claimer, 2, 60);
    expect(first[0]?.token.expiry).not.toEqual(second[0]?.token.expiry);
    const settled = await claimer.settleMany?.({
      rows: held([...first, ...second]),
      settlement: { kind: "delete" },
    });
    expect(settled).toEqual([true, true, true, true]);
    expect(await readAll(db.admin, table)).toEqual([]);
    await claimer.close();
  });

  it("a row whose lease was taken over answers false alone and is left unchanged; the others are deleted", async () => {
    const table = await db.tables.create({ name: uniqueName("sm_lost"), columns: leaseColumns });
    await insertRows(table, 3);
    const claimer = await openLease(driverOf(), table);
    const claimed = await claimLeased(claimer, 3);
    const stolen = claimed[1]?.row.id;
    const other = await stealLease(table, stolen);
    const settled = await claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "delete" } });
    expect(settled).toEqual([true, false, true]);
    const rows = await readAll(db.admin, table);
    expect(rows.map((row) => row.id)).toEqual([stolen]);
    expect(rows[0]?.locked_until).toEqual(other);
    await claimer.close();
  });

  it("markProcessed sets processedAt and clears lockedUntil on the rows still held, and only on those", async () => {
    const table = await db.tables.create({
      name: uniqueName("sm_mark"),
      columns: { ...leaseColumns, processedAt: "processed_at" },
    });
    await insertRows(table, 3);
    const claimer = await openLease(driverOf(), table);
    const claimed = await claimLeased(claimer, 3);
    const other = await stealLease(table, claimed[2]?.row.id);
    const at = new Date("2030-01-02T03:04:05.000Z");
    const settled = await claimer.settleMany?.({
      rows: held(claimed),
      settlement: { kind: "markProcessed", at },
    });
    expect(settled).toEqual([true, true, false]);
    const rows = await readAll(db.admin, table);
    expect(rows.map((row) => [row.processed_at, row.locked_until, row.attempt])).toEqual([
      [at, null, 2],
      [at, null, 2],
      [null, other, 2],
    ]);
    await claimer.close();
  });

  it("a row that is gone answers false; a row given with a stale token of its own answers false", async () => {
    const table = await db.tables.create({ name: uniqueName("sm_gone"), columns: leaseColumns });
    await insertRows(table, 3);
    const claimer = await openLease(driverOf(), table);
    const claimed = await claimLeased(claimer, 3);
    await db.admin.query(`DELETE FROM ${quote(table.name)} WHERE id = ?`, [claimed[0]?.row.id]);
    const [extended] = await claimer.extend(held(claimed.slice(1, 2)), new Date(Date.now() + 90_000));
    expect(extended).not.toBeNull();
    const settled = await claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "delete" } });
    expect(settled).toEqual([false, false, true]);
    expect((await readAll(db.admin, table)).map((row) => row.id)).toEqual([claimed[1]?.row.id]);
    await claimer.close();
  });

  it("text ids: the rows are found by their text id, one taken over answers false", async () => {
    const name = uniqueName("sm_text");
    const table = await db.tables.create(
      { name, columns: leaseColumns },
      `CREATE TABLE ${quote(name)} (id VARCHAR(36) NOT NULL PRIMARY KEY, payload JSON NOT NULL, attempt INT NOT NULL DEFAULT 1, run_at DATETIME(6) NULL, locked_until DATETIME(6) NULL) ENGINE=InnoDB`,
    );
    await insertRows(table, 3, true);
    const claimer = await openLease(driverOf(), table);
    const claimed = await claimLeased(claimer, 3);
    expect(claimed.map((c) => c.row.id)).toEqual(["r0", "r1", "r2"]);
    await stealLease(table, "r0");
    expect(await claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "delete" } })).toEqual([
      false,
      true,
      true,
    ]);
    expect((await readAll(db.admin, table)).map((row) => row.id)).toEqual(["r0"]);
    await claimer.close();
  });

  it("500 rows in one call are all settled", async () => {
    const table = await db.tables.create({ name: uniqueName("sm_500"), columns: leaseColumns });
    await insertRows(table, 500);
    const claimer = await openLease(driverOf(), table);
    const claimed = await claimLeased(claimer, 500);
    const settled = await claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "delete" } });
    expect(settled).toHaveLength(500);
    expect(settled?.every((flag) => flag)).toBe(true);
    expect(await readAll(db.admin, table)).toEqual([]);
    await claimer.close();
  });

  it("a database error fails the whole call and changes no row", async () => {
    const name = uniqueName("sm_fail");
    const table = await db.tables.create({ name, columns: { ...leaseColumns, processedAt: "processed_at" } });
    await insertRows(table, 3);
    // The last row's delete and update fail inside the statement: every row must stay as it was.
    await db.admin.query(
      `CREATE TRIGGER ${quote(`${name}_d`)} BEFORE DELETE ON ${quote(name)} FOR EACH ROW BEGIN IF OLD.payload = '2' THEN SIGNAL SQLSTATE '45000'; END IF; END`,
    );
    await db.admin.query(
      `CREATE TRIGGER ${quote(`${name}_u`)} BEFORE UPDATE ON ${quote(name)} FOR EACH ROW BEGIN IF OLD.payload = '2' AND NEW.processed_at IS NOT NULL THEN SIGNAL SQLSTATE '45000'; END IF; END`,
    );
    const claimer = await openLease(driverOf(), table);
    const claimed = await claimLeased(claimer, 3);
    const before = await readAll(db.admin, table);
    await expect(
      claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "delete" } }),
    ).rejects.toMatchObject({
      errno: 1644,
    });
    await expect(
      claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "markProcessed", at: new Date() } }),
    ).rejects.toMatchObject({ errno: 1644 });
    expect(await readAll(db.admin, table)).toEqual(before);
    // A table dropped meanwhile: a SchemaError, by its code.
    await db.admin.query(`DROP TABLE ${quote(name)}`);
    await expect(
      claimer.settleMany?.({ rows: held(claimed), settlement: { kind: "delete" } }),
    ).rejects.toMatchObject({
      code: "SCHEMA",
    });
    await claimer.close();
  });
});

const rowLockColumns = {
  id: "id",
  payload: "payload",
  attempt: "attempt",
  runAt: "run_at",
  processedAt: "processed_at",
};

async function claimBatch(
  table: TableDefinition,
  limit: number,
): Promise<{
  claimer: RowLockClaimer;
  token: RowLockToken;
  rows: readonly import("@rowclaim/core/driver").ClaimedRow[];
}> {
  const claimer = (await db.driver.open(table, { group: null, logger: silentLogger })) as RowLockClaimer;
  const batch = await claimer.claim({ limit, now: new Date() });
  if (batch === null) throw new Error("nothing claimed");
  expect(batch.rows).toHaveLength(limit);
  return { claimer, token: batch.token, rows: batch.rows };
}

describe("a row lock batch's end with its acks", () => {
  it("deletes the batch's rows and commits", async () => {
    const description: TableDescription = { name: uniqueName("sm_rl"), columns: { ...rowLockColumns } };
    delete (description.columns as { processedAt?: string }).processedAt;
    const table = await db.tables.create(description);
    await insertRows(table, 3);
    const { claimer, token, rows } = await claimBatch(table, 3);
    await claimer.endBatch(token, { rows, settlement: { kind: "delete" } });
    expect(await readAll(db.admin, table)).toEqual([]);
    await claimer.close();
  });

  it("a released batch keeps its rows, unchanged", async () => {
    const table = await db.tables.create({ name: uniqueName("sm_rb"), columns: rowLockColumns });
    await insertRows(table, 2);
    const before = await readAll(db.admin, table);
    const { claimer, token, rows } = await claimBatch(table, 2);
    const [row] = rows;
    if (row !== undefined) await claimer.settle(token, row, { kind: "markProcessed", at: new Date() });
    await claimer.release(token);
    expect(await readAll(db.admin, table)).toEqual(before);
    await claimer.close();
  });

  it("markProcessed sets processedAt and counts the attempt, as settle does, for 500 rows", async () => {
    const table = await db.tables.create({ name: uniqueName("sm_rlm"), columns: rowLockColumns });
    await insertRows(table, 500);
    const { claimer, token, rows } = await claimBatch(table, 500);
    const at = new Date("2030-01-02T03:04:05.000Z");
    await claimer.endBatch(token, { rows, settlement: { kind: "markProcessed", at } });
    const after = await readAll(db.admin, table);
    expect(after).toHaveLength(500);
    expect(
      after.every((row) => row.attempt === 2 && (row.processed_at as Date).getTime() === at.getTime()),
    ).toBe(true);
    await claimer.close();
  });

  it("a database error is thrown normalised, and the batch rolls back with nothing changed", async () => {
    const name = uniqueName("sm_rle");
    const table = await db.tables.create({ name, columns: rowLockColumns });
    await insertRows(table, 2);
    await db.admin.query(
      `CREATE TRIGGER ${quote(`${name}_u`)} BEFORE UPDATE ON ${quote(name)} FOR EACH ROW BEGIN IF OLD.payload = '1' THEN SIGNAL SQLSTATE '45000'; END IF; END`,
    );
    const before = await readAll(db.admin, table);
    const { claimer, token, rows } = await claimBatch(table, 2);
    await expect(
      claimer.endBatch(token, { rows, settlement: { kind: "markProcessed", at: new Date() } }),
    ).rejects.toMatchObject({ errno: 1644 });
    expect(await readAll(db.admin, table)).toEqual(before);
    await claimer.close();
  });
});
