// A child process of advisory-processes.test.ts: subscribes to the advisory table on the file in
// ROWCLAIM_SQLITE_FILE (retrying while another process holds the file's advisory form), settles
// every row with ack, and records each settlement that reported success in the log table, in the
// same database. Exits once the table is empty.
import { ack, BrokerError, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";

const table = defineTable(JSON.parse(process.env.ROWCLAIM_ADVISORY_TABLE ?? "{}"));
const log = process.env.ROWCLAIM_ADVISORY_LOG ?? "";
const driver = createSqliteDriver({ filename: process.env.ROWCLAIM_SQLITE_FILE ?? "" });
const broker = createBroker({ driver, logger: silentLogger });
const quote = (name) => `"${name.replaceAll('"', '""')}"`;
const record = driver.database.prepare(`INSERT INTO ${quote(log)} (row_id, pid) VALUES (?, ?)`);
const count = driver.database.prepare(`SELECT count(*) AS n FROM ${quote(table.name)}`);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const started = Date.now();
let subscribed = false;
while (!subscribed && count.get().n > 0 && Date.now() - started < 60_000) {
  try {
    await broker.subscribe(
      table,
      async (delivery) => {
        await pause(1);
        await delivery.settle(ack());
        record.run(delivery.id, process.pid);
      },
      { workers: 4, pollInterval: 5 },
    );
    subscribed = true;
    process.stderr.write(`subscribed ${process.pid}\n`);
  } catch (error) {
    if (!BrokerError.is(error)) throw error;
    await pause(20);
  }
}
while (count.get().n > 0 && Date.now() - started < 60_000) await pause(20);
await broker.close();
