/**
 * The commit pattern of a subscription with the defaults: a worker's ack commits in the
 * transaction of its next claim (one commit, one disk sync under `synchronous = FULL`, a job),
 * in the lease and the advisory lock form, however long the handler ran. Observed through the
 * statements the connection runs (better-sqlite3's `verbose` hook), never through timing.
 */
import { createBroker, defineTable, silentLogger, type TableDefinition } from "@rowclaim/core";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createSqliteDriver, type SqliteDriver } from "../src/index.js";
import { claimColumns, leaseTable, tempDatabaseFile, uniqueName, waitFor } from "./support.js";

/** The statements a connection ran, each as `BEGIN`, `COMMIT`, `ROLLBACK`, `DELETE`, `UPDATE` or `SELECT`. */
interface StatementLog {
  readonly db: Database.Database;
  readonly kinds: string[];
}

/** A connection set as the driver sets a file it opens (WAL, `synchronous = FULL`), logging each statement's kind. */
function loggedConnection(file: string): StatementLog {
  const kinds: string[] = [];
  const db = new Database(file, {
    timeout: 200,
    verbose: (sql: unknown) => {
      kinds.push(String(sql).trimStart().split(/\s/, 1)[0]?.toUpperCase() ?? "");
    },
  });
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  return { db, kinds };
}

/**
 * How each `DELETE` (an ack) was committed: `"with a claim"` where it ran between `BEGIN` and
 * `COMMIT` beside a claim's statements (the lease claim's `UPDATE`, the advisory claim's
 * `SELECT` of candidates), else `"alone"` (autocommitted, or in a transaction of acks only).
 */
function ackCommits(kinds: readonly string[]): ("with a claim" | "alone")[] {
  const commits: ("with a claim" | "alone")[] = [];
  let transaction: string[] | undefined;
  for (const kind of kinds) {
    if (kind === "BEGIN") transaction = [];
    else if (kind === "COMMIT" || kind === "ROLLBACK") {
      const deletes = (transaction ?? []).filter((one) => one === "DELETE").length;
      const claimed = (transaction ?? []).some((one) => one !== "DELETE");
      for (let n = 0; n < deletes; n += 1) commits.push(claimed ? "with a claim" : "alone");
      transaction = undefined;
    } else if (transaction !== undefined) transaction.push(kind);
    else if (kind === "DELETE") commits.push("alone");
  }
  return commits;
}

const temp = tempDatabaseFile("rowclaim-sqlite-commits-");
const opened: { driver: SqliteDriver; db: Database.Database }[] = [];

afterEach(async () => {
  for (const { driver, db } of opened.splice(0)) {
    await driver.close();
    db.close();
  }
});

/** A driver on a logged connection to the test file, with `table` created. */
function loggedDriver(table: TableDefinition): { driver: SqliteDriver; log: StatementLog } {
  const log = loggedConnection(temp.file);
  const driver = createSqliteDriver({ database: log.db });
  opened.push({ driver, db: log.db });
  log.db.exec(driver.schemaSql(table));
  return { driver, log };
}

/** A handler that waits on a timer, as one waiting for I/O: longer than a turn of the claim loop (10 ms). */
async function slowHandler(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 25));
}

/** Publishes `count` rows, subscribes one worker with `handler` and waits until every row is acked. */
async function drain(
  driver: SqliteDriver,
  table: TableDefinition,
  count: number,
  handler: () => Promise<void> | undefined,
  values: (n: number) => Record<string, string> = () => ({}),
): Promise<void> {
  const broker = createBroker({ driver, logger: silentLogger });
  await broker.publishMany(
    table,
    Array.from({ length: count }, (_, n) => ({ payload: { n }, values: values(n) })),
  );
  const subscription = await broker.subscribe(table, handler, { workers: 1 });
  await waitFor(() => subscription.stats.acked >= count, 20_000, "every row acked");
  await subscription.stop();
}

describe("a worker's ack commits in the transaction of its next claim (lease form, defaults)", () => {
  it("commits every ack with the next claim when the handler waits on I/O longer than a turn of the claim loop", async () => {
    const table = defineTable(leaseTable(uniqueName("commits_lease_slow")));
    const { driver, log } = loggedDriver(table);
    log.kinds.length = 0;
    await drain(driver, table, 4, slowHandler);
    expect(ackCommits(log.kinds)).toEqual(Array.from({ length: 4 }, () => "with a claim"));
  });
});

describe("a worker's ack commits in the transaction of its next claim (advisory lock form, defaults)", () => {
  it("commits every ack with the next claim when the handler waits on I/O longer than a turn of the claim loop", async () => {
    const name = uniqueName("commits_advisory_slow");
    const table = defineTable({
      name,
      columns: { ...claimColumns },
      extraColumns: ["account"],
      advisoryLock: `${name}-{account}`,
    });
    const { driver, log } = loggedDriver(table);
    log.kinds.length = 0;
    await drain(driver, table, 4, slowHandler, (n) => ({ account: `a${n}` }));
    expect(ackCommits(log.kinds)).toEqual(Array.from({ length: 4 }, () => "with a claim"));
  });
});
