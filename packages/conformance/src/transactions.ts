/**
 * Transactions: a table naming an isolation level (or SQLite transaction mode) claims and settles
 * at it where the driver takes it and is refused with DECLARATION where it does not; a publish
 * inside the caller's own transaction exists only if that transaction commits, and is refused
 * with INVALID_ARGUMENT where the driver cannot publish in a transaction, or where the client
 * given is no longer inside one (it would autocommit).
 *
 * @module
 */
import {
  ack,
  type ClaimFormName,
  type IsolationLevel,
  isolationLevels,
  retry,
  type TransactionMode,
  transactionModes,
} from "@rowclaim/core";
import { expect } from "vitest";
import { caught, expectCode } from "./assertions.js";
import { type Seen, see } from "./deliveries.js";
import type { Fixture } from "./fixture.js";
import type { ConformanceHarness } from "./harness.js";
import { conformanceGroup, conformanceTest, optOutCheck } from "./registry.js";
import { allForms, columnNames, formLabels } from "./tables.js";
import { toNumber } from "./values.js";
import { waitFor, within } from "./wait.js";

const SUITE = "transactions";

/** Claims, retries and acks a row of a table in `form` that names `level` or `mode`. */
async function claimsAt(
  fx: Fixture,
  form: ClaimFormName,
  setting: { readonly isolation: IsolationLevel } | { readonly mode: TransactionMode },
): Promise<void> {
  const table = await fx.table(form, { ...setting, lease: 5 });
  const broker = await fx.broker();
  const seen: Seen[] = [];
  await broker.subscribe(
    table,
    (delivery) => {
      see(seen, delivery);
      return seen.length === 1 ? retry() : ack();
    },
    { pollInterval: 20 },
  );
  await broker.publishMany(table, [{ payload: 1 }]);
  await waitFor(
    "the row to be retried and acked",
    async () => seen.length >= 2 && (await fx.rows(table)).length === 0,
  );
  expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
}

/**
 * Asserts that subscribing to a table in `form` naming `level` or `mode` is refused with
 * DECLARATION, and that nothing claimed the row published before.
 */
async function refusedAt(
  fx: Fixture,
  form: ClaimFormName,
  setting: { readonly isolation: IsolationLevel } | { readonly mode: TransactionMode },
): Promise<void> {
  const table = await fx.table(form, { ...setting, lease: 5 });
  const broker = await fx.broker();
  await broker.publish(table, "waits");
  expectCode(await caught(() => broker.subscribe(table, () => ack(), { pollInterval: 20 })), "DECLARATION");
  const rows = await fx.rows(table);
  expect(rows, "the row published before the refused subscription").toHaveLength(1);
  expect(toNumber(rows[0]?.[columnNames.attempt]), "the refused subscription claimed the row").toBe(1);
}

/**
 * Asserts that a row lock claim of a table naming `level` runs at `level`: the harness reads the
 * level from the server, for the transaction that holds the claimed row locked, while the
 * handler runs inside it.
 */
async function rowLockClaimRunsAt(fx: Fixture, level: IsolationLevel): Promise<void> {
  const caps = await fx.requireForm("rowLock");
  if (!caps.isolationLevels.includes(level)) {
    return fx.skip(
      `the ${fx.harness.name} driver does not take isolation "${level}" (refused with DECLARATION)`,
    );
  }
  const probe = fx.harness.claimIsolation?.bind(fx.harness);
  if (probe === undefined) {
    return fx.skip(
      `the ${fx.harness.name} harness gives no claimIsolation(), so no test can read the level a claim's transaction runs at`,
    );
  }
  const table = await fx.table("rowLock", { isolation: level });
  const broker = await fx.broker();
  const release = fx.gate();
  const seen: Seen[] = [];
  await broker.subscribe(
    table,
    async (delivery) => {
      see(seen, delivery);
      await release.opened;
      return ack();
    },
    { pollInterval: 20 },
  );
  await broker.publish(table, "isolated");
  await waitFor("the handler to start", () => seen.length > 0);
  // The handler is still running, so the claim's transaction is open and holds the row locked.
  const runsAt = await within(
    "the harness to read the claim's isolation level",
    probe(table, seen[0]?.delivery.id ?? ""),
  );
  expect(
    String(runsAt).toLowerCase(),
    `the claim of a table naming isolation "${level}" ran at "${String(runsAt)}"`,
  ).toBe(level);
  release.open();
  await waitFor("the row to be acked", async () => (await fx.rows(table)).length === 0);
}

/** Registers the transactions sub-suite. */
export function transactionsSuite(harness: ConformanceHarness): void {
  optOutCheck(harness);
  conformanceGroup("transactions", () => {
    for (const form of allForms) {
      for (const level of isolationLevels) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] a table naming isolation "${level}" claims and settles where the driver takes the level, and is refused with DECLARATION where it does not`,
          async (fx) => {
            const caps = await fx.requireForm(form);
            if (caps.isolationLevels.includes(level)) await claimsAt(fx, form, { isolation: level });
            else await refusedAt(fx, form, { isolation: level });
          },
        );
      }
      for (const mode of transactionModes) {
        conformanceTest(
          harness,
          SUITE,
          `[${form}] a table naming mode "${mode}" claims and settles where the driver takes the mode, and is refused with DECLARATION where it does not`,
          async (fx) => {
            const caps = await fx.requireForm(form);
            if (caps.transactionModes.includes(mode)) await claimsAt(fx, form, { mode });
            else await refusedAt(fx, form, { mode });
          },
        );
      }
    }

    for (const level of isolationLevels) {
      conformanceTest(
        harness,
        SUITE,
        `[rowLock] a row lock claim runs at the isolation "${level}" its table names, read from the server while the handler runs`,
        (fx) => rowLockClaimRunsAt(fx, level),
      );
    }

    conformanceTest(
      harness,
      SUITE,
      "publish with { client } exists only if the caller's transaction commits where the driver can publish in a transaction, and fails with INVALID_ARGUMENT where it cannot",
      async (fx) => {
        const caps = await fx.capabilities();
        const form = caps.forms[0] ?? "lease";
        if (!caps.transactionalPublish) {
          const table = await fx.table(form);
          const broker = await fx.broker();
          expectCode(await caught(() => broker.publish(table, 1, { client: {} })), "INVALID_ARGUMENT");
          expectCode(
            await caught(() => broker.publishMany(table, [{ payload: 2 }], { client: {} })),
            "INVALID_ARGUMENT",
          );
          expect(await fx.rows(table), "a refused publish wrote a row").toEqual([]);
          return;
        }
        const inTransaction = harness.inTransaction?.bind(harness);
        if (inTransaction === undefined) {
          return fx.skip(
            `the ${harness.name} harness gives no inTransaction(), so no test can open a transaction for publish`,
          );
        }
        const table = await fx.table(form);
        const broker = await fx.broker();
        await inTransaction(
          async (client) => {
            await broker.publish(table, "rolled back", { client });
          },
          { rollback: true },
        );
        expect(
          await fx.rows(table),
          `the row published in a rolled-back transaction (${formLabels[form]} table) exists`,
        ).toEqual([]);
        await inTransaction(
          async (client) => {
            await broker.publishMany(table, [{ payload: "committed" }, { payload: "also committed" }], {
              client,
            });
            // Not committed yet: a second connection does not see the rows.
            expect(
              await fx.rows(table),
              "a row published in a transaction is visible before it commits",
            ).toEqual([]);
          },
          { rollback: false },
        );
        expect(await fx.rows(table)).toHaveLength(2);
        const seen: Seen[] = [];
        await broker.subscribe(table, (delivery) => void see(seen, delivery), { pollInterval: 20 });
        await waitFor(
          "the committed rows to be delivered",
          async () => seen.length >= 2 && (await fx.rows(table)).length === 0,
        );
        expect(seen.map((s) => s.payload)).toEqual(["committed", "also committed"]);
      },
    );

    conformanceTest(
      harness,
      SUITE,
      "publish with { client } whose transaction already ended fails with INVALID_ARGUMENT and writes nothing (it would autocommit)",
      async (fx) => {
        const caps = await fx.capabilities();
        if (!caps.transactionalPublish) {
          return fx.skip(`the ${harness.name} driver does not publish in a caller's transaction`);
        }
        const inTransaction = harness.inTransaction?.bind(harness);
        if (inTransaction === undefined) {
          return fx.skip(
            `the ${harness.name} harness gives no inTransaction(), so no test can hold a client whose transaction ended`,
          );
        }
        const table = await fx.table(caps.forms[0] ?? "lease");
        const broker = await fx.broker();
        let ended: unknown;
        await inTransaction(
          async (client) => {
            ended = client;
          },
          { rollback: false },
        );
        // The transaction committed and the harness gave its client back (released or closed).
        expectCode(
          await caught(() => broker.publish(table, "after the end", { client: ended })),
          "INVALID_ARGUMENT",
        );
        expectCode(
          await caught(() => broker.publishMany(table, [{ payload: "after the end" }], { client: ended })),
          "INVALID_ARGUMENT",
        );
        expect(await fx.rows(table), "a publish on a client outside a transaction wrote a row").toEqual([]);
      },
    );
  });
}
