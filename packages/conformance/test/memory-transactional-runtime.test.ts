// Transactional handlers through core's three runtimes on the in-memory reference driver: a
// body's statements (kept by the memory client and run at the commit) commit with its
// settlement or not at all. Each test reads the side table and the queue from the memory database.
import {
  ack,
  type ClaimFormName,
  type Delivery,
  defineTable,
  type Outcome,
  type TableDescription,
} from "@rowclaim/core";
import { describe, expect, it } from "vitest";
import { executeSql, type MemoryTransactionClient } from "../src/memory/index.js";
import { waitFor } from "../src/wait.js";
import { changeRows, deferred, type SetUp, setUp } from "./memory-setup.js";

const forms: readonly ClaimFormName[] = ["rowLock", "lease", "advisory"];

function description(form: ClaimFormName, name: string): TableDescription {
  const columns = { id: "id", payload: "payload", attempt: "attempt", processedAt: "processed_at" };
  switch (form) {
    case "rowLock":
      return { name, columns };
    case "lease":
      return { name, columns: { ...columns, lockedUntil: "locked_until" }, lease: 30 };
    case "advisory":
      return { name, columns, advisoryLock: "{id}" };
  }
}

/** A table of `form` and a side table of two rows (ids 1 and 2) that the bodies delete from. */
async function withSide(
  form: ClaimFormName,
  name: string,
  options: Parameters<typeof setUp>[1] = {},
  more: Partial<TableDescription["columns"]> = {},
) {
  const base = description(form, name);
  const t = setUp({ ...base, columns: { ...base.columns, ...more } }, options);
  const side = defineTable({ name: `${name}_side`, columns: { id: "id", payload: "payload" } });
  executeSql(t.database, t.driver.schemaSql(side));
  const row = { group: null, runAt: null, priority: null, headers: null, values: {} } as const;
  await t.driver.publish(
    side,
    [
      { ...row, payload: '"a"' },
      { ...row, payload: '"b"' },
    ],
    {},
  );
  return { t, side: () => t.database.rows(side).map((row) => row.id) };
}

/** The one delivery `handler` gets, once the table is drained. */
async function runOne(t: SetUp, handler: (delivery: Delivery<unknown>) => Promise<Outcome | undefined>) {
  const broker = t.broker();
  await broker.publish(t.table, "job");
  const subscription = await broker.subscribe(t.table, handler);
  return { broker, subscription };
}

describe.each(forms)("a transactional handler in the %s form", (form) => {
  it("commits its body's statements together with its ack", async () => {
    const { t, side } = await withSide(form, `tx_commit_${form}`);
    const { broker } = await runOne(t, async (delivery) => {
      await delivery.transaction((client) => {
        (client as MemoryTransactionClient).execute(`DELETE FROM tx_commit_${form}_side WHERE id = 1`);
        return ack();
      });
      return undefined;
    });
    await waitFor("the row processed", () => t.rows()[0]?.processed_at instanceof Date);
    await broker.close();
    expect(side()).toEqual([2]);
  });

  it("commits none of a body's statements when the body throws; the handler then settles the row itself", async () => {
    const { t, side } = await withSide(form, `tx_throw_${form}`);
    let caught: unknown;
    const { broker } = await runOne(t, async (delivery) => {
      try {
        await delivery.transaction((client) => {
          (client as MemoryTransactionClient).execute(`DELETE FROM tx_throw_${form}_side WHERE id = 1`);
          throw new Error("the body failed");
        });
      } catch (error) {
        caught = error;
      }
      return ack();
    });
    await waitFor("the row processed", () => t.rows()[0]?.processed_at instanceof Date);
    await broker.close();
    expect(String(caught)).toContain("the body failed");
    expect(side()).toEqual([1, 2]);
  });

  it("fails with INVALID_ARGUMENT when the body returns something that is not an outcome, and when called after the row was settled", async () => {
    const { t, side } = await withSide(form, `tx_invalid_${form}`);
    const codes: unknown[] = [];
    const { broker } = await runOne(t, async (delivery) => {
      await delivery
        .transaction(() => "not an outcome" as unknown as Outcome)
        .catch((error: { code?: string }) => codes.push(error.code));
      await delivery.settle(ack());
      await delivery.transaction(() => ack()).catch((error: { code?: string }) => codes.push(error.code));
      return undefined;
    });
    await waitFor("the row processed", () => t.rows()[0]?.processed_at instanceof Date);
    await broker.close();
    expect(codes).toEqual(["INVALID_ARGUMENT", "INVALID_ARGUMENT"]);
    expect(side()).toEqual([1, 2]);
  });

  it("is refused with UNSUPPORTED_FORM on a driver without transactional handlers", async () => {
    const { t } = await withSide(form, `tx_none_${form}`, { without: ["transaction"] });
    let code: unknown;
    const { broker } = await runOne(t, async (delivery) => {
      await delivery
        .transaction(() => ack())
        .catch((error: { code?: string }) => {
          code = error.code;
        });
      return ack();
    });
    await waitFor("the row processed", () => t.rows()[0]?.processed_at instanceof Date);
    await broker.close();
    expect(code).toBe("UNSUPPORTED_FORM");
  });
});

describe("a transactional handler whose settlement fails", () => {
  it("in the row lock form, rolls the batch back with its body's statements; the row comes back, retried with backoff", async () => {
    const { t, side } = await withSide("rowLock", "tx_refused", {}, { runAt: "run_at" });
    const allow = t.database.refuseNonNull(t.table, "processed_at");
    const failures: unknown[] = [];
    // The row lock runtime's claims read the system clock: the retry's due time must too.
    const broker = t.broker({ clock: () => new Date() });
    await broker.publish(t.table, "job");
    const subscription = await broker.subscribe(
      t.table,
      async (delivery) => {
        if (failures.length > 0) return ack();
        await delivery
          .transaction((client) => {
            (client as MemoryTransactionClient).execute("DELETE FROM tx_refused_side WHERE id = 1");
            return ack();
          })
          .catch((error: unknown) => {
            failures.push(error);
            allow();
          });
        return undefined;
      },
      { pollInterval: 20 },
    );
    // The next claim settles the row as a failed attempt (a retry after the backoff), without the handler.
    await waitFor("the row retried", () => t.rows()[0]?.run_at instanceof Date);
    await waitFor("the row processed on its next claim", () => t.rows()[0]?.processed_at instanceof Date);
    await broker.close();
    expect(failures).toHaveLength(1);
    expect(subscription.stats.settleErrors).toBe(1);
    expect(side()).toEqual([1, 2]);
  });

  it("in the lease form, rolls back with LEASE_LOST when the lease was taken while the body ran", async () => {
    const { t, side } = await withSide("lease", "tx_lost");
    const gate = deferred();
    const lost: unknown[] = [];
    const { broker, subscription } = await runOne(t, async (delivery) => {
      await delivery
        .transaction(async (client) => {
          (client as MemoryTransactionClient).execute("DELETE FROM tx_lost_side WHERE id = 1");
          await gate.promise;
          return ack();
        })
        .catch((error: { code?: string }) => lost.push(error.code));
      return undefined;
    });
    await waitFor("the body running", () => subscription.inWork === 1);
    changeRows(t, () => ({ locked_until: new Date(Date.UTC(2031, 0, 1)) }));
    gate.resolve();
    await waitFor("the lost transaction", () => lost.length === 1);
    await broker.close();
    expect(lost).toEqual(["LEASE_LOST"]);
    expect(side()).toEqual([1, 2]);
  });
});
