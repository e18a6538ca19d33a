// Shared by the broker runtime tests (typed tables, logging, events, OpenTelemetry, the testing
// helper): a broker on a fresh SQLite file, and a wait on a condition (never a fixed sleep).
// These tests live in the command line's package because it depends on every driver, and core
// cannot depend on a driver.
import { join } from "node:path";
import { type Broker, type BrokerOptions, createBroker, type TableDefinition } from "@rowclaim/core";
import { createSqliteDriver, type SqliteDriver } from "@rowclaim/sqlite";
import { tempDir } from "../support.js";

/** A broker on a new SQLite file with `tables` created. */
export function sqliteBroker(
  tables: readonly TableDefinition[],
  options: Omit<BrokerOptions, "driver"> = {},
): { broker: Broker; driver: SqliteDriver } {
  const driver = createSqliteDriver({ filename: join(tempDir(), "queue.db") });
  for (const table of tables) driver.database.exec(driver.schemaSql(table));
  return { broker: createBroker({ driver, ...options }), driver };
}

/** Resolves once `condition` holds, checking every 10 ms; fails after `timeoutMs`. */
export async function waitFor(what: string, condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}

/** The columns of the runtime tests' tables: lease form, with group and headers. */
export const leaseColumns = {
  id: "id",
  payload: "payload",
  attempt: "attempt",
  runAt: "run_at",
  group: "queue",
  headers: "headers",
  lockedUntil: "locked_until",
} as const;
