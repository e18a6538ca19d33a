import { BrokerError, createBroker, type Delivery, defineTable, silentLogger } from "@rowclaim/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestDb, uniqueName, waitFor } from "./helpers.js";

let db: TestDb;
beforeAll(async () => {
  db = await TestDb.open();
});
afterAll(async () => {
  await db.close();
});

const hostile = {
  id: 'i"d',
  payload: "pay load",
  attempt: 'attempt"; DROP TABLE x; --',
  runAt: "run at'",
  priority: "select",
  group: 'gr"oup',
  headers: "hea$1ders",
} as const;

describe("table and column names with quotes, spaces or SQL in them", () => {
  it.each(["rowLock", "lease", "advisory"] as const)("work in the %s form", async (form) => {
    const name = `${uniqueName("rc_weird")} "ta'ble"; DROP TABLE pg_class; --`;
    const table = await db.create(
      defineTable({
        name,
        columns: form === "lease" ? { ...hostile, lockedUntil: 'locked"until' } : { ...hostile },
        ...(form === "advisory"
          ? { advisoryLock: `${name}-{ac"count}-{gr"oup}`, extraColumns: ['ac"count'] }
          : {}),
        ...(form === "lease" ? { lease: 5 } : {}),
        maxAttempts: 2,
        deadLetter: { group: "dead'; --" },
      }),
    );
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    await broker.publish(
      table,
      { hello: "wörld" },
      {
        group: "q'1",
        headers: { "x-a": "b" },
        ...(form === "advisory" ? { values: { 'ac"count': "7" } } : {}),
      },
    );
    await broker.publish(
      table,
      { fail: true },
      {
        group: "q'1",
        ...(form === "advisory" ? { values: { 'ac"count': "8" } } : {}),
      },
    );
    const seen: Delivery[] = [];
    await broker.subscribe(
      table,
      (delivery) => {
        seen.push(delivery);
        if ((delivery.payload as { fail?: boolean }).fail === true) throw new Error("fails");
      },
      { group: "q'1", pollInterval: 20, backoff: { baseMs: 0, maxMs: 0 } },
    );
    // Wait for the state asserted below: the acked row gone and the failing one moved to the dead
    // group (its last delivery starts before that settlement commits).
    await waitFor(
      async () => {
        const rows = await db.rows(table);
        return seen.length === 3 && rows.length === 1 && rows[0]?.[hostile.group] === "dead'; --";
      },
      { what: "ack and dead letter" },
    );
    const [dead] = await db.rows(table);
    expect(dead?.[hostile.group]).toBe("dead'; --");
    expect(dead?.[hostile.attempt]).toBe(3);
    expect(seen.find((d) => (d.payload as { hello?: string }).hello === "wörld")?.headers).toEqual({
      "x-a": "b",
    });
    await broker.close();
    const [stillThere] = await db.query("SELECT count(*)::int AS n FROM pg_class WHERE relname = 'pg_class'");
    expect(stillThere?.n).toBe(1);
  });

  it("a name PostgreSQL cannot hold (a NUL character) is refused with DECLARATION before any SQL runs", async () => {
    const table = defineTable({
      name: `rc_nul_${Date.now()}\u0000x`,
      columns: { id: "id", payload: "payload" },
    });
    const broker = createBroker({ driver: db.driver(), logger: silentLogger });
    const failure = await broker.subscribe(table, () => undefined).catch((error: unknown) => error);
    expect(BrokerError.is(failure, "DECLARATION")).toBe(true);
    await broker.close();
  });
});
