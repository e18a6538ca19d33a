// A child process for the crash tests: subscribes to the table described in ROWCLAIM_CRASH_TABLE
// with a handler that announces the row and never returns, so the parent can SIGKILL it mid-handler.
import { createBroker, defineTable, silentLogger } from "@rowclaim/core";
import { createPostgresDriver } from "@rowclaim/postgres";

const table = defineTable(JSON.parse(process.env.ROWCLAIM_CRASH_TABLE ?? "null"));
const driver = createPostgresDriver({
  url: process.env.ROWCLAIM_POSTGRES_URL ?? "",
  max: 4,
  applicationName: "rowclaim-crash-child",
});
const broker = createBroker({ driver, logger: silentLogger });
await broker.subscribe(
  table,
  async (delivery) => {
    process.stdout.write(`handling ${String(delivery.id)} ${delivery.attempt}\n`);
    await new Promise(() => {});
  },
  { pollInterval: 50 },
);
process.stdout.write("subscribed\n");
