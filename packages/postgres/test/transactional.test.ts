// Transactional handlers on PostgreSQL, beyond the conformance suite's: the client a body
// receives is the one that holds the row (the claim's transaction, the advisory key's session), and
// a row published with { client } from a body is queued only with the body's settlement.
import { ack, BrokerError, createBroker, silentLogger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeTable, TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

describe("the client of a transactional body holds the row", () => {
  it("row lock form: the body's client is the claim's transaction, which already holds the row's lock", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_txh_rl")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const found: { own: number; other: string | undefined }[] = [];
    await broker.subscribe(
      table,
      (delivery) =>
        delivery.transaction(async (client) => {
          // Only the transaction that locked the row can lock it again without waiting.
          const own = await client.query(`SELECT id FROM "${table.name}" WHERE id = $1 FOR UPDATE NOWAIT`, [
            delivery.id,
          ]);
          const other = await db
            .query(`SELECT id FROM "${table.name}" WHERE id = $1 FOR UPDATE NOWAIT`, [delivery.id])
            .then(
              () => undefined,
              (error: { code?: string }) => error.code,
            );
          found.push({ own: own.rowCount ?? 0, other });
          return ack();
        }),
      { pollInterval: 20, transactional: true },
    );
    await broker.publish(table, 1);
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "the row to be acked" });
    // 55P03: lock_not_available.
    expect(found).toEqual([{ own: 1, other: "55P03" }]);
    await broker.close();
  });

  it("advisory lock form: the body's client is the session that holds the row's key", async () => {
    const table = await db.create(describeTable("advisory", uniqueName("rc_txh_adv")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const held: number[] = [];
    await broker.subscribe(
      table,
      (delivery) =>
        delivery.transaction(async (client) => {
          const result = await client.query(
            "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted",
          );
          held.push(Number(result.rows[0]?.n));
          return ack();
        }),
      { pollInterval: 20, transactional: true },
    );
    await broker.publish(table, 1, { values: { account: "a" } });
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "the row to be acked" });
    expect(held).toEqual([1]);
    await broker.close();
  });
});

describe("a row published with { client } from a transactional body", () => {
  it("is queued only when the body's settlement commits: not by a body that throws, once by the one that acks", async () => {
    const table = await db.create(describeTable("lease", uniqueName("rc_txh_src"), { lease: 5 }));
    const next = await db.create(describeTable("lease", uniqueName("rc_txh_next")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const errors: unknown[] = [];
    await broker.subscribe(
      table,
      async (delivery) => {
        try {
          await delivery.transaction(async (client) => {
            await broker.publish(next, { after: delivery.id, attempt: delivery.attempt }, { client });
            if (delivery.attempt === 1) throw new Error("the first attempt fails after publishing");
            return ack();
          });
        } catch (error) {
          errors.push(error);
          throw error;
        }
      },
      { pollInterval: 20, backoff: { baseMs: 10, maxMs: 10 }, transactional: true },
    );
    const id = await broker.publish(table, "source");
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "the source row to be acked" });
    expect((await db.rows(next)).map((row) => row.payload)).toEqual([{ after: id, attempt: 2 }]);
    expect(errors).toHaveLength(1);
    expect(BrokerError.is(errors[0])).toBe(false);
    await broker.close();
  });
});

describe("a failed statement inside a row lock body", () => {
  it("rolls back to the body's savepoint, so the claim's transaction can still retry the row, which then acks", async () => {
    const table = await db.create(describeTable("rowLock", uniqueName("rc_txh_sp")));
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const codes: (string | undefined)[] = [];
    await broker.subscribe(
      table,
      async (delivery) => {
        try {
          await delivery.transaction(async (client) => {
            if (delivery.attempt === 1) await client.query("SELECT * FROM rowclaim_no_such_table");
            return ack();
          });
        } catch (error) {
          codes.push((error as { code?: string }).code);
          throw error;
        }
      },
      { pollInterval: 20, backoff: { baseMs: 10, maxMs: 10 }, transactional: true },
    );
    await broker.publish(table, 1);
    await waitFor(async () => (await db.rows(table)).length === 0, { what: "the row to be acked" });
    // 42P01: undefined_table, the body's own error, passed on unchanged.
    expect(codes).toEqual(["42P01"]);
    await broker.close();
  });
});
