/**
 * The bench tables: one layout per form shared by every rowclaim contender and every hand-written
 * loop, and the SQLite file every SQLite contender starts from.
 *
 * @module
 */
import { type ClaimFormName, createBroker, defineTable, type TableDefinition } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";
import { chunks, payloads } from "./contender.js";

/**
 * The bench table of a form: id, payload, attempt, run_at, priority, and the form's own columns;
 * an advisory table with `keyLimit` lets that many rows of one account run at once.
 */
export function benchTable(name: string, form: ClaimFormName, keyLimit?: number): TableDefinition {
  return defineTable({
    name,
    columns: {
      id: "id",
      payload: "payload",
      attempt: "attempt",
      runAt: "run_at",
      priority: "priority",
      ...(form === "lease" ? { lockedUntil: "locked_until" } : {}),
    },
    ...(form === "advisory"
      ? {
          extraColumns: ["account"],
          advisoryLock:
            keyLimit === undefined ? `${name}:{account}` : { key: `${name}:{account}`, limit: keyLimit },
        }
      : {}),
  });
}

/** SQLite's `synchronous` levels the benchmark runs at (the driver's default is `"full"`). */
export type SqliteSync = "full" | "normal";

/**
 * A new SQLite file at `file` holding rowclaim's lease bench table with `jobs` rows, published by
 * rowclaim's driver at `synchronous` (so every SQLite contender starts from the same table).
 */
export async function fillSqliteFile(
  file: string,
  table: TableDefinition,
  synchronous: SqliteSync,
  jobs: number,
): Promise<void> {
  const driver = createSqliteDriver({ filename: file, synchronous });
  driver.database.exec(driver.schemaSql(table));
  const broker = createBroker({ driver });
  try {
    for (const part of chunks(payloads(jobs), 500)) {
      await broker.publishMany(
        table,
        part.map((payload) => ({ payload })),
      );
    }
  } finally {
    await broker.close();
  }
}
