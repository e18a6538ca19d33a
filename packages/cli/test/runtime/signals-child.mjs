// The process of the handleSignals test: a broker with handleSignals: true and one subscription
// on a SQLite file; prints "ready" once subscribed, and "stopped" when the subscription stops.
// Usage: node signals-child.mjs <sqlite file>
import { ack, createBroker, defineTable } from "@rowclaim/core";
import { createSqliteDriver } from "@rowclaim/sqlite";

const [filename] = process.argv.slice(2);
const table = defineTable({
  name: "jobs",
  columns: { id: "id", payload: "payload", attempt: "attempt", lockedUntil: "locked_until" },
});
const driver = createSqliteDriver({ filename });
driver.database.exec(driver.schemaSql(table));
const broker = createBroker({ driver, handleSignals: true });
broker.on("subscriptionStopped", () => process.stdout.write("stopped\n"));
await broker.subscribe(table, () => ack());
process.stdout.write("ready\n");
