// A child process of processes.test.ts: drains a lease table on the file in ROWCLAIM_SQLITE_FILE
// and prints every payload it delivered as one JSON line once the table is empty.
import { ack, createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";

const table = defineTable(JSON.parse(process.env.ROWCLAIM_DRAIN_TABLE ?? "{}"));
const driver = createSqliteDriver({ filename: process.env.ROWCLAIM_SQLITE_FILE ?? "" });
const broker = createBroker({ driver, logger: silentLogger });
const delivered = [];
await broker.subscribe(
  table,
  (delivery) => {
    delivered.push(delivery.payload);
    return ack();
  },
  { workers: 4, batch: 4, pollInterval: 5 },
);
const count = driver.database.prepare(`SELECT count(*) AS n FROM "${table.name.replaceAll('"', '""')}"`);
const started = Date.now();
while (count.get().n > 0 && Date.now() - started < 50_000)
  await new Promise((resolve) => setTimeout(resolve, 20));
await broker.close();
process.stdout.write(`${JSON.stringify(delivered)}\n`);
